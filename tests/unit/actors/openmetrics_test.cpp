// The OpenMetrics text of a node's metrics: counter families named without
// _total, every histogram with its +Inf bucket, escapes, # EOF.
#include "actors/node/metrics.hpp"

#include <gtest/gtest.h>

namespace {

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos || text.rfind(line + "\n", 0) == 0;
}

TEST(OpenMetrics, FamiliesSamplesAndTheEnd) {
  qf::metrics m;
  m.query_finished("duckDb", "bi", "Success", "trinoHttp", 0.25);
  m.config_reload_failed("a\"b\\c\nd");
  auto text = m.render_openmetrics();
  EXPECT_TRUE(has_line(text, "# TYPE queryflux_queries counter")) << text;
  EXPECT_TRUE(has_line(text, "queryflux_queries_total{cluster_group=\"bi\",engine_type=\"duckDb\","
                             "protocol=\"trinoHttp\",status=\"Success\"} 1"))
    << text;
  EXPECT_EQ(text.find("# TYPE queryflux_queries_total"), std::string::npos);
  EXPECT_TRUE(has_line(text, "# TYPE queryflux_query_duration_seconds histogram"));
  EXPECT_NE(text.find("queryflux_query_duration_seconds_bucket{cluster_group=\"bi\",engine_type=\"duckDb\",le=\"+Inf\"} 1"),
            std::string::npos)
    << text;
  EXPECT_NE(text.find("queryflux_query_duration_seconds_sum{cluster_group=\"bi\",engine_type=\"duckDb\"} 0.25"),
            std::string::npos);
  // Bounds as the classic format writes them: 0.05, not 0.050000000000000003.
  EXPECT_EQ(text.find("00000000"), std::string::npos) << text;
  EXPECT_TRUE(has_line(text, "queryflux_config_reload_failures_total{stage=\"a\\\"b\\\\c\\nd\"} 1"))
    << text;
  ASSERT_GE(text.size(), 6u);
  EXPECT_EQ(text.substr(text.size() - 6), "# EOF\n");
  // Classic text keeps the counters' full names.
  EXPECT_NE(m.render().find("# TYPE queryflux_queries_total counter"), std::string::npos);
}

} // namespace
