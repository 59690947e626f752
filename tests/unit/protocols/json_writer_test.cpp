// JSON string escaping, number recognition and base64.
#include "protocols/common/json_writer.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using namespace qf::json_text;

namespace {

std::string json_string(std::string_view s) {
  std::string out;
  append_string(out, s);
  return out;
}

} // namespace

TEST(json_writer, escapes_quotes_backslashes_and_control_characters) {
  EXPECT_EQ(json_string("a\"b\\c"), R"("a\"b\\c")");
  EXPECT_EQ(json_string("line\nbreak\ttab\r"), R"("line\nbreak\ttab\r")");
  EXPECT_EQ(json_string(std::string_view{"\x01\x1f", 2}), R"("\u0001\u001f")");
  EXPECT_EQ(json_string(std::string_view{"nul\0in", 6}), R"("nul\u0000in")");
}

TEST(json_writer, keeps_valid_utf8_and_replaces_invalid_bytes) {
  EXPECT_EQ(json_string("héllo 日本 🚀"), "\"héllo 日本 🚀\"");
  EXPECT_EQ(json_string("bad \xff byte"), "\"bad \xEF\xBF\xBD byte\"");
  EXPECT_EQ(json_string("cut \xe6\x97"), "\"cut \xEF\xBF\xBD\xEF\xBF\xBD\"");
  EXPECT_EQ(json_string("overlong \xc0\xaf"), "\"overlong \xEF\xBF\xBD\xEF\xBF\xBD\"");
  EXPECT_EQ(json_string("surrogate \xed\xa0\x80"),
            "\"surrogate \xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\"");
}

TEST(json_writer, output_always_parses_as_json) {
  std::string all_bytes;
  for (int i = 0; i < 256; ++i)
    all_bytes += static_cast<char>(i);
  auto parsed = nlohmann::json::parse(json_string(all_bytes), nullptr, false);
  ASSERT_FALSE(parsed.is_discarded());
  EXPECT_TRUE(parsed.is_string());
}

TEST(json_writer, recognises_json_numbers_only) {
  for (auto ok : {"0", "-1", "42", "3.14", "-0.5", "1e10", "2.5E-3"})
    EXPECT_TRUE(is_number(ok)) << ok;
  for (auto bad : {"", "-", "01", "1.", ".5", "NaN", "Infinity", "1e", "+1",
                   "0x10", "1 "})
    EXPECT_FALSE(is_number(bad)) << bad;
}

TEST(json_writer, base64_round_trips_and_rejects_garbage) {
  EXPECT_EQ(base64_encode(""), "");
  EXPECT_EQ(base64_encode("f"), "Zg==");
  EXPECT_EQ(base64_encode("fo"), "Zm8=");
  EXPECT_EQ(base64_encode("foo"), "Zm9v");
  EXPECT_EQ(base64_encode("alice:secret"), "YWxpY2U6c2VjcmV0");
  std::string out;
  ASSERT_TRUE(base64_decode("YWxpY2U6c2VjcmV0", out));
  EXPECT_EQ(out, "alice:secret");
  ASSERT_TRUE(base64_decode("Zm8=", out));
  EXPECT_EQ(out, "fo");
  EXPECT_FALSE(base64_decode("Zm8=x", out));
  EXPECT_FALSE(base64_decode("!!!!", out));
  EXPECT_FALSE(base64_decode("Zg===", out));
}
