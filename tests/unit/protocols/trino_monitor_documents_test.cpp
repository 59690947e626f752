// What Trino's /v1/jmx/mbean and /metrics answer, as the monitors read it.
#include "protocols/trino/monitor_documents.hpp"

#include <gtest/gtest.h>

#include <cmath>

using namespace qf::trino;

TEST(trino_monitor_documents, an_mbeans_numeric_attributes_are_read) {
  // As Trino answers GET /v1/jmx/mbean/trino.execution:name=QueryManager.
  auto doc = parse_jmx_attributes(R"({
    "className": "io.trino.execution.SqlQueryManager",
    "objectName": "trino.execution:name=QueryManager",
    "attributes": [
      {"name": "RunningQueries", "type": "long", "value": 7},
      {"name": "QueuedQueries", "type": "long", "value": 3},
      {"name": "Description", "type": "java.lang.String", "value": "x"},
      {"name": "NoValue", "type": "long"},
      "noise"
    ]})");
  ASSERT_TRUE(doc);
  EXPECT_EQ(doc->size(), 2u);
  EXPECT_EQ(doc->at("RunningQueries"), 7);
  EXPECT_EQ(doc->at("QueuedQueries"), 3);
}

TEST(trino_monitor_documents, what_is_no_mbean_is_refused) {
  for (auto bad : {"", "[]", "{}", "{\"attributes\": 3}", "<html>", "{\"attributes\": [",
                   "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]"})
    EXPECT_FALSE(parse_jmx_attributes(bad)) << bad;
  EXPECT_TRUE(parse_jmx_attributes("{\"attributes\": []}"));
}

TEST(trino_monitor_documents, prometheus_text_is_read_by_metric_name) {
  auto m = parse_prometheus_text(
    "# HELP trino_execution_name_QueryManager_RunningQueries RunningQueries\n"
    "# TYPE trino_execution_name_QueryManager_RunningQueries gauge\n"
    "trino_execution_name_QueryManager_RunningQueries 4.0\n"
    "trino_execution_name_QueryManager_QueuedQueries{instance=\"a\"} 2 1700000000000\r\n"
    "trino_metadata_name_DiscoveryNodeManager_ActiveNodeCount 3.0\n"
    "labelled{q=\"a}b\",r=\"c\\\"d\"} 8\n"
    "labelled 9\n"
    "labelled{x=\"1\"} 10\n"
    "weird +Inf\n"
    "nan NaN\n"
    "broken{ 1\n"
    "novalue\n"
    "9starts_with_digit 1\n"
    "bad_value x12\n");
  EXPECT_EQ(m.at("trino_execution_name_QueryManager_RunningQueries"), 4);
  EXPECT_EQ(m.at("trino_execution_name_QueryManager_QueuedQueries"), 2);
  EXPECT_EQ(m.at("trino_metadata_name_DiscoveryNodeManager_ActiveNodeCount"), 3);
  EXPECT_EQ(m.at("labelled"), 9); // the unlabelled sample wins
  EXPECT_TRUE(std::isinf(m.at("weird")));
  EXPECT_TRUE(std::isnan(m.at("nan")));
  for (auto absent : {"broken", "novalue", "9starts_with_digit", "bad_value"})
    EXPECT_EQ(m.count(absent), 0u) << absent;
}

TEST(trino_monitor_documents, prometheus_text_keeps_at_most_the_names_it_may) {
  std::string body;
  for (int i = 0; i < 50; ++i)
    body += "m" + std::to_string(i) + " 1\n";
  EXPECT_EQ(parse_prometheus_text(body, 10).size(), 10u);
}
