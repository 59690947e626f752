// RFC 8785 canonical JSON: the RFC's own examples, byte for byte.
#include "protocols/common/canonical_json.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <bit>
#include <cstdint>

using qf::json_text::canonical;
using qf::json_text::ecmascript_number;

TEST(canonical_json, the_rfc_8785_sample_comes_out_as_the_rfc_prints_it) {
  // RFC 8785 section 3.2.2.
  auto input = nlohmann::json::parse(R"({
    "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
    "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
    "literals": [null, true, false]
  })");
  EXPECT_EQ(canonical(input).value(),
            R"({"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],)"
            "\"string\":\"\xe2\x82\xac$\\u000f\\nA'B\\\"\\\\\\\\\\\"/\"}");
}

TEST(canonical_json, names_sort_by_utf16_code_units) {
  // RFC 8785 section 3.2.3: the emoji (a surrogate pair, D83D) sorts before
  // U+FB33 although its UTF-8 bytes sort after.
  auto input = nlohmann::json::parse(R"({
    "\u20ac": "Euro Sign", "\r": "Carriage Return", "\ufb33": "Hebrew Letter Dalet With Dagesh",
    "1": "One", "\ud83d\ude00": "Emoji: Grinning Face", "\u0080": "Control",
    "\u00f6": "Latin Small Letter O With Diaeresis"
  })");
  auto out = canonical(input).value();
  std::vector<std::string> order;
  for (const auto* name : {"\\r", "1", "\xc2\x80", "\xc3\xb6", "\xe2\x82\xac",
                           "\xf0\x9f\x98\x80", "\xef\xac\xb3"})
    order.push_back(std::string{"\""} + name + "\":");
  size_t at = 0;
  for (const auto& key : order) {
    auto found = out.find(key, at);
    ASSERT_NE(found, std::string::npos) << key << " in " << out;
    at = found;
  }
}

TEST(canonical_json, numbers_print_as_ecmascript_does) {
  // RFC 8785 appendix B: IEEE 754 bits and their text.
  const std::pair<uint64_t, const char*> cases[] = {
    {0x0000000000000000, "0"},
    {0x8000000000000000, "0"},
    {0x0000000000000001, "5e-324"},
    {0x8000000000000001, "-5e-324"},
    {0x7fefffffffffffff, "1.7976931348623157e+308"},
    {0x4340000000000000, "9007199254740992"},
    {0xc340000000000000, "-9007199254740992"},
    {0x4430000000000000, "295147905179352830000"},
    {0x44b52d02c7e14af5, "9.999999999999997e+22"},
    {0x44b52d02c7e14af6, "1e+23"},
    {0x3eb0c6f7a0b5ed8d, "0.000001"},
    {0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"},
    {0x41b3de4355555553, "333333333.3333332"},
    {0x41b3de4355555555, "333333333.3333333"},
  };
  for (auto [bits, text] : cases)
    EXPECT_EQ(ecmascript_number(std::bit_cast<double>(bits)), text) << std::hex << bits;
}

TEST(canonical_json, equal_values_give_equal_bytes_whatever_their_spelling) {
  auto a = nlohmann::json::parse(R"({"b": [1, {"y": 2, "x": "\u0041"}], "a": null})");
  auto b = nlohmann::json::parse("{\"a\":null,\n \"b\":[1,{\"x\":\"A\",\"y\":2}]}");
  EXPECT_EQ(canonical(a), canonical(b));
  EXPECT_EQ(canonical(a).value(), R"({"a":null,"b":[1,{"x":"A","y":2}]})");
}

TEST(canonical_json, integers_beyond_two_to_the_53_print_as_the_double_they_round_to) {
  EXPECT_EQ(canonical(nlohmann::json::parse("[9007199254740991, 9007199254740993, "
                                            "-9007199254740993, 18446744073709551615]"))
              .value(),
            "[9007199254740991,9007199254740992,-9007199254740992,18446744073709552000]");
}

TEST(canonical_json, text_that_is_not_utf8_cannot_be_canonical) {
  nlohmann::json v = {{"k", std::string{"\xc3\x28"}}};
  EXPECT_FALSE(canonical(v));
  nlohmann::json overlong = std::string{"\xc0\xaf"};
  EXPECT_FALSE(canonical(overlong));
  nlohmann::json cut = std::string{"ok\xe2\x82"};
  EXPECT_FALSE(canonical(cut));
}
