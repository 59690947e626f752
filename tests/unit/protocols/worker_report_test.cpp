// A worker's heartbeat report and its labels file: round trips, and each
// kind of bad input refused with its reason.
#include "protocols/worker_api/worker_report.hpp"

#include <gtest/gtest.h>

using namespace qf::worker_api;

TEST(worker_report, a_report_round_trips) {
  worker_report r;
  r.name = "checkout-7f9c";
  r.labels = {{"team", "checkout"}, {"app.kubernetes.io/name", "qf"}};
  r.version = "0.1.0";
  r.incarnation = "4b3c";
  r.downloaded_revision = "sha256:ab";
  r.last_error = "unknown snapshot schemaVersion 2";
  r.config_source = "peer";
  r.status = "draining";
  r.heartbeat_interval_secs = 5;
  auto out = decode_report(encode(r));
  ASSERT_TRUE(out.report) << out.error;
  EXPECT_EQ(*out.report, r);
}

TEST(worker_report, bad_reports_are_refused_with_their_reason) {
  auto error_of = [](std::string_view body) { return decode_report(body).error; };
  EXPECT_EQ(error_of("not json"), "the report must be a JSON object");
  EXPECT_EQ(error_of("[]"), "the report must be a JSON object");
  EXPECT_EQ(error_of(R"({"version":"1"})"),
            "name: expected 1 to 253 letters, digits, '-', '_' or '.'");
  EXPECT_EQ(error_of(R"({"name":"a b","version":"1"})"),
            "name: expected 1 to 253 letters, digits, '-', '_' or '.'");
  EXPECT_EQ(error_of(R"({"name":"w","version":"1","labels":{"k":1}})"), "labels.k: expected a string");
  EXPECT_EQ(error_of(R"({"name":"w"})"), "version: expected the worker's version");
  EXPECT_EQ(error_of(R"({"name":"w","version":"1","status":"gone"})"),
            "status: expected active or draining");
  EXPECT_EQ(error_of(R"({"name":"w","version":"1","coordinationMode":"x"})"),
            "coordinationMode: expected controlPlane or local");
  EXPECT_EQ(error_of(R"({"name":"w","version":"1","heartbeatIntervalSecs":0})"),
            "heartbeatIntervalSecs: expected 1 to 3600");
  EXPECT_EQ(error_of(R"({"name":"w","version":"1","labels":{"a":{"b":{"c":{"d":1}}}}})"),
            "the report nests too deep");
  EXPECT_EQ(error_of(std::string(max_report_bytes + 1, ' ')),
            "the report is larger than 65536 bytes");
  EXPECT_TRUE(decode_report(R"({"name":"w","version":"1"})").report);
}

TEST(worker_report, the_downward_api_labels_file_is_read_with_its_quoting) {
  auto out = parse_labels_file("app=\"checkout\"\n"
                               "pod-template-hash=\"7f9c\"\r\n"
                               "\n"
                               "note=\"say \\\"hi\\\"\\n\"\n"
                               "broken\n"
                               "bare=value\n");
  EXPECT_EQ(out.labels.at("app"), "checkout");
  EXPECT_EQ(out.labels.at("pod-template-hash"), "7f9c");
  EXPECT_EQ(out.labels.at("note"), "say \"hi\"\n");
  EXPECT_EQ(out.labels.size(), 3u);
  ASSERT_EQ(out.problems.size(), 2u);
  EXPECT_EQ(out.problems[0], "line 5: expected key=\"value\"");
  EXPECT_EQ(out.problems[1], "line 6: the value of bare is not quoted");
}
