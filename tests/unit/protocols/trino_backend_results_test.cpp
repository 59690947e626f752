// Reading QueryResults as a Trino cluster sends them: what our own encoder
// writes reads back cell for cell, and Trino's other shapes are understood.
#include "protocols/trino/backend_results.hpp"
#include "protocols/trino/query_results.hpp"

#include <gtest/gtest.h>

using namespace qf;

TEST(trino_backend_results, what_the_encoder_writes_reads_back_cell_for_cell) {
  std::vector<column> cols{
    {"b", {type_id::boolean}},
    {"i", {type_id::bigint}},
    {"d", {type_id::double_precision}},
    {"n", {type_id::decimal, 10, 2}},
    {"s", {type_id::varchar}},
    {"bin", {type_id::varbinary}},
    {"day", {type_id::date}},
    {"ts", {type_id::timestamp, 6}},
    {"tz", {type_id::timestamp_tz, 3}},
    {"u", {type_id::uuid}},
  };
  row_batch rows;
  rows.width = cols.size();
  rows.cells = {"true", "-9007199254740993", "1.5", "12345678.90", "h\xc3\xa9 \"x\"",
                std::string{"\0\xff", 2}, "2024-02-29", "2024-02-29 23:59:59.123456",
                "2024-02-29 23:59:59.123", "4a4b5c5d-0000-4000-8000-000000000001",
                std::nullopt, std::nullopt, std::nullopt, std::nullopt, std::nullopt,
                std::nullopt, std::nullopt, std::nullopt, std::nullopt, std::nullopt};
  trino::results_page page;
  page.id = "q1";
  page.next_uri = "http://gw/v1/statement/executing/q1/2";
  page.columns = &cols;
  page.rows = &rows;
  page.row_count = 2;
  page.stats.state = trino::query_state::running;
  auto back = trino::parse_backend_page(trino::encode(page));
  EXPECT_EQ(back.id, "q1");
  EXPECT_EQ(back.next_uri, page.next_uri);
  EXPECT_EQ(back.state, "RUNNING");
  ASSERT_TRUE(back.columns);
  ASSERT_EQ(back.columns->size(), cols.size());
  for (size_t i = 0; i < cols.size(); ++i) {
    EXPECT_EQ((*back.columns)[i].name, cols[i].name);
    EXPECT_EQ((*back.columns)[i].type, cols[i].type) << cols[i].name;
  }
  EXPECT_EQ(back.rows.width, cols.size());
  EXPECT_EQ(back.rows.cells, rows.cells);
}

TEST(trino_backend_results, data_without_columns_uses_those_known) {
  std::vector<column> known{{"x", {type_id::integer}}, {"a", {type_id::json}}};
  auto page = trino::parse_backend_page(
    R"({"id":"q","nextUri":"http://t/v1/statement/executing/q/3","data":[[1,[1,{"k":null}]],[null,[]]],"stats":{"state":"RUNNING"}})",
    &known);
  EXPECT_FALSE(page.columns);
  EXPECT_EQ(page.rows.cells, (std::vector<cell>{"1", R"([1,{"k":null}])", std::nullopt, "[]"}));
  EXPECT_THROW(trino::parse_backend_page(R"({"id":"q","data":[[1]]})"), std::invalid_argument);
  EXPECT_THROW(trino::parse_backend_page(R"({"id":"q","data":[[1,2,3]]})", &known),
               std::invalid_argument);
}

TEST(trino_backend_results, errors_update_counts_and_garbage) {
  auto failed = trino::parse_backend_page(
    R"({"id":"q","stats":{"state":"FAILED"},"error":{"message":"line 1:1: mismatched input","errorCode":1,"errorName":"SYNTAX_ERROR","errorType":"USER_ERROR"}})");
  ASSERT_TRUE(failed.error);
  EXPECT_EQ(failed.error->error_name, "SYNTAX_ERROR");
  EXPECT_EQ(failed.error->error_type, "USER_ERROR");
  EXPECT_EQ(failed.error->error_code, 1);
  EXPECT_EQ(failed.next_uri, "");
  auto insert = trino::parse_backend_page(
    R"({"id":"q","columns":[{"name":"rows","type":"bigint"}],"data":[[3]],"updateType":"INSERT","updateCount":3})");
  EXPECT_EQ(insert.update_count, 3);
  for (const char* bad : {"", "[]", "{", "{\"columns\":{}}", "{\"columns\":[{\"name\":1}]}",
                          "{\"columns\":[{\"name\":\"b\",\"type\":\"varbinary\"}],\"data\":[[\"!!\"]]}"})
    EXPECT_THROW(trino::parse_backend_page(bad), std::invalid_argument) << bad;
  std::string deep(100, '[');
  EXPECT_THROW(trino::parse_backend_page(R"({"data":)" + deep), std::invalid_argument);
}

TEST(trino_backend_results, type_names) {
  using trino::parse_type_name;
  EXPECT_EQ(parse_type_name("varchar(5)").id, type_id::varchar);
  EXPECT_EQ(parse_type_name("char(3)").id, type_id::varchar);
  EXPECT_EQ(parse_type_name("decimal(38, 10)"), (sql_type{type_id::decimal, 38, 10}));
  EXPECT_EQ(parse_type_name("timestamp(3) with time zone"), (sql_type{type_id::timestamp_tz, 3}));
  EXPECT_EQ(parse_type_name("timestamp"), (sql_type{type_id::timestamp, 3}));
  EXPECT_EQ(parse_type_name("time(6)"), (sql_type{type_id::time, 6}));
  EXPECT_EQ(parse_type_name("time(3) with time zone").id, type_id::varchar);
  EXPECT_EQ(parse_type_name("array(row(a integer))").id, type_id::json);
  EXPECT_EQ(parse_type_name("map(varchar, bigint)").id, type_id::json);
  EXPECT_EQ(parse_type_name("ipaddress").id, type_id::varchar);
  EXPECT_EQ(parse_type_name("interval day to second").id, type_id::interval);
}
