// The Trino QueryResults encoder and X-Trino-* header parsing.
#include "protocols/trino/client_session.hpp"
#include "protocols/trino/query_results.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using namespace qf;
using json = nlohmann::json;

namespace {

json encode_json(const trino::results_page& page) {
  auto text = trino::encode(page);
  auto parsed = json::parse(text, nullptr, false);
  EXPECT_FALSE(parsed.is_discarded()) << text;
  return parsed;
}

} // namespace

TEST(trino_codec, first_page_is_queued_with_next_uri_and_no_data) {
  trino::results_page page;
  page.id = "q1";
  page.info_uri = "http://gw/v1/query/q1";
  page.next_uri = "http://gw/v1/statement/queued/q1/1";
  auto j = encode_json(page);
  EXPECT_EQ(j["id"], "q1");
  EXPECT_EQ(j["infoUri"], "http://gw/v1/query/q1");
  EXPECT_EQ(j["nextUri"], "http://gw/v1/statement/queued/q1/1");
  EXPECT_EQ(j["stats"]["state"], "QUEUED");
  EXPECT_EQ(j["stats"]["queued"], true);
  EXPECT_FALSE(j.contains("data"));
  EXPECT_FALSE(j.contains("columns"));
  EXPECT_FALSE(j.contains("error"));
}

TEST(trino_codec, rows_are_encoded_by_column_type) {
  std::vector<column> cols{
    {"b", {type_id::boolean}},
    {"i", {type_id::bigint}},
    {"d", {type_id::double_precision}},
    {"n", {type_id::decimal, 10, 2}},
    {"s", {type_id::varchar}},
    {"bin", {type_id::varbinary}},
    {"day", {type_id::date}},
    {"ts", {type_id::timestamp, 6}},
    {"tz", {type_id::timestamp_tz, 6}},
  };
  row_batch rows;
  rows.width = cols.size();
  rows.cells = {"true", "42",         "NaN",        "12.50",
                "a\"b", std::string{"\x00\xff", 2}, "2024-02-29",
                "2024-02-29 01:02:03.000004", "2024-02-29 01:02:03.000000"};
  for (size_t i = 0; i < cols.size(); ++i)
    rows.cells.emplace_back(); // a second row of NULLs
  trino::results_page page;
  page.id = "q";
  page.columns = &cols;
  page.rows = &rows;
  page.row_count = 2;
  page.stats.state = trino::query_state::finished;
  auto j = encode_json(page);
  ASSERT_EQ(j["columns"].size(), cols.size());
  EXPECT_EQ(j["columns"][3]["type"], "decimal(10,2)");
  EXPECT_EQ(j["columns"][3]["typeSignature"]["rawType"], "decimal");
  EXPECT_EQ(j["columns"][3]["typeSignature"]["arguments"][1]["value"], 2);
  EXPECT_EQ(j["columns"][7]["type"], "timestamp(6)");
  EXPECT_EQ(j["columns"][8]["type"], "timestamp(6) with time zone");
  auto row = j["data"][0];
  EXPECT_EQ(row[0], true);
  EXPECT_EQ(row[1], 42);
  EXPECT_EQ(row[2], "NaN"); // not a JSON number: sent as a string
  EXPECT_EQ(row[3], "12.50");
  EXPECT_EQ(row[4], "a\"b");
  EXPECT_EQ(row[5], "AP8=");
  EXPECT_EQ(row[6], "2024-02-29");
  EXPECT_EQ(row[7], "2024-02-29 01:02:03.000004");
  EXPECT_EQ(row[8], "2024-02-29 01:02:03.000000 UTC");
  for (const auto& v : j["data"][1])
    EXPECT_TRUE(v.is_null());
  EXPECT_EQ(j["stats"]["state"], "FINISHED");
  EXPECT_FALSE(j.contains("nextUri"));
}

TEST(trino_codec, a_page_is_a_window_of_the_batch) {
  std::vector<column> cols{{"x", {type_id::integer}}};
  row_batch rows;
  rows.width = 1;
  for (int i = 0; i < 10; ++i)
    rows.cells.emplace_back(std::to_string(i));
  trino::results_page page;
  page.columns = &cols;
  page.rows = &rows;
  page.first_row = 3;
  page.row_count = 4;
  auto j = encode_json(page);
  EXPECT_EQ(j["data"], json::parse("[[3],[4],[5],[6]]"));
}

TEST(trino_codec, errors_carry_trino_codes) {
  trino::results_page page;
  page.id = "q";
  page.stats.state = trino::query_state::failed;
  page.error = trino::query_error{"queue is full",
                                  trino::errors::query_queue_full};
  auto j = encode_json(page);
  EXPECT_EQ(j["stats"]["state"], "FAILED");
  EXPECT_EQ(j["error"]["message"], "queue is full");
  EXPECT_EQ(j["error"]["errorCode"], 131074);
  EXPECT_EQ(j["error"]["errorName"], "QUERY_QUEUE_FULL");
  EXPECT_EQ(j["error"]["errorType"], "INSUFFICIENT_RESOURCES");
  EXPECT_TRUE(j["error"]["failureInfo"].is_object());
}

TEST(trino_codec, the_backends_notices_are_warnings) {
  trino::results_page page;
  page.id = "q";
  EXPECT_EQ(encode_json(page)["warnings"], nlohmann::json::array());
  std::vector<trino::warning> warnings{{"NOTICE", "table \"t\" does not exist, skipping"},
                                       {"WARNING", "careful"}};
  page.warnings = &warnings;
  auto j = encode_json(page);
  ASSERT_EQ(j["warnings"].size(), 2u);
  EXPECT_EQ(j["warnings"][0]["warningCode"]["name"], "NOTICE");
  EXPECT_EQ(j["warnings"][0]["warningCode"]["code"], 0);
  EXPECT_EQ(j["warnings"][0]["message"], "table \"t\" does not exist, skipping");
  EXPECT_EQ(j["warnings"][1]["message"], "careful");
}

TEST(trino_client_session, reads_user_catalog_schema_source_and_tags) {
  auto s = trino::parse_client_session({
    {"X-Trino-User", "alice"},
    {"X-Trino-Catalog", "hive"},
    {"X-Trino-Schema", "web"},
    {"X-Trino-Source", "dbt"},
    {"X-Trino-Client-Tags", "adhoc, nightly"},
    {"X-Trino-Session", "query_tags=team%3Abi%2Ccost,query_max_run_time=1h"},
    {"X-Custom", "Value"},
  });
  EXPECT_EQ(s.user, "alice");
  EXPECT_EQ(s.catalog, "hive");
  EXPECT_EQ(s.schema, "web");
  EXPECT_EQ(s.source, "dbt");
  EXPECT_TRUE(s.tags.count("adhoc"));
  EXPECT_TRUE(s.tags.count("nightly"));
  EXPECT_EQ(s.tags.at("team"), "bi");
  EXPECT_FALSE(s.tags.at("cost"));
  EXPECT_EQ(s.session_properties.at("query_max_run_time"), "1h");
  EXPECT_EQ(s.headers.at("x-custom"), "Value"); // names lowercased
}

TEST(trino_client_session, basic_auth_supplies_user_and_password) {
  auto s = trino::parse_client_session(
    {{"Authorization", "Basic YWxpY2U6c2VjcmV0"}}); // alice:secret
  EXPECT_EQ(s.user, "alice");
  EXPECT_EQ(s.password, "secret");
  auto both = trino::parse_client_session(
    {{"Authorization", "Basic YWxpY2U6c2VjcmV0"}, {"X-Trino-User", "bob"}});
  EXPECT_EQ(both.user, "bob");
}

TEST(trino_client_session, malformed_headers_are_ignored) {
  auto s = trino::parse_client_session({
    {"Authorization", "Basic !!!notbase64"},
    {"X-Trino-Session", "novalue,=x,%zz=%4"},
    {"X-Trino-Client-Tags", ",,,"},
  });
  EXPECT_TRUE(s.user.empty());
  EXPECT_TRUE(s.tags.empty());
}

TEST(trino_client_session, percent_decoding) {
  EXPECT_EQ(trino::percent_decode("a%20b+c%2c"), "a b c,");
  EXPECT_EQ(trino::percent_decode("100%"), "100%");
  EXPECT_EQ(trino::percent_decode("%4"), "%4");
  EXPECT_EQ(trino::percent_decode("%zz"), "%zz");
}
