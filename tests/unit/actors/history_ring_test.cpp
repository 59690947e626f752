// The in-memory history: newest first, the oldest overwritten once full,
// a record made twice kept once.
#include "actors/control/history_ring.hpp"
#include "actors/control/packed_record.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using namespace qf;

namespace {

query_record record_of(const std::string& id, const std::string& user = "alice") {
  query_record r;
  r.proxy_query_id = id;
  r.user = user;
  r.sql = "SELECT " + id;
  r.status = "Success";
  return r;
}

std::vector<std::string> ids_listed(const history_ring& ring, history_filter f = {}) {
  std::vector<std::string> out;
  auto page = nlohmann::json::parse(ring.list(f));
  for (const auto& q : page["queries"])
    out.push_back(q["proxyQueryId"]);
  return out;
}

} // namespace

TEST(history_ring, lists_newest_first) {
  history_ring ring{10};
  for (auto id : {"q1", "q2", "q3"})
    ring.record(record_of(id));
  EXPECT_EQ(ids_listed(ring), (std::vector<std::string>{"q3", "q2", "q1"}));
}

TEST(history_ring, once_full_the_oldest_go_round_after_round) {
  history_ring ring{3};
  for (int i = 1; i <= 8; ++i)
    ring.record(record_of("q" + std::to_string(i)));
  EXPECT_EQ(ids_listed(ring), (std::vector<std::string>{"q8", "q7", "q6"}));
  EXPECT_TRUE(ring.get("q6").has_value());
  EXPECT_FALSE(ring.get("q5").has_value());
  auto total = nlohmann::json::parse(ring.list({}))["total"];
  EXPECT_EQ(total, 3);
}

TEST(history_ring, a_record_made_twice_is_kept_once_with_the_first_values) {
  history_ring ring{100};
  ring.record(record_of("q1", "first"));
  for (int i = 2; i <= 5; ++i)
    ring.record(record_of("q" + std::to_string(i)));
  ring.record(record_of("q1", "second"));
  EXPECT_EQ(ids_listed(ring).size(), 5u);
  EXPECT_EQ(nlohmann::json::parse(*ring.get("q1"))["user"], "first");
}

TEST(history_ring, filters_and_pages_over_the_wrapped_circle) {
  history_ring ring{4};
  for (int i = 1; i <= 6; ++i)
    ring.record(record_of("q" + std::to_string(i), i % 2 ? "odd" : "even"));
  history_filter f;
  f.user = "even";
  EXPECT_EQ(ids_listed(ring, f), (std::vector<std::string>{"q6", "q4"}));
  history_filter page;
  page.offset = 1;
  page.limit = 2;
  EXPECT_EQ(ids_listed(ring, page), (std::vector<std::string>{"q5", "q4"}));
}

TEST(packed_record, every_field_round_trips_and_short_bytes_do_not_crash) {
  query_record r;
  r.proxy_query_id = "pg_20261201_000000_00001_abcde_1";
  r.user = "ünï";
  r.source = "pgbench";
  r.catalog = "postgres";
  r.schema = "";
  r.cluster_group = "g";
  r.cluster_name = "pg";
  r.engine_type = "postgres";
  r.protocol = "postgresWire";
  r.sql = std::string("SELECT '\0' AS nul", 18);
  r.status = "Failed";
  r.error_message = "boom";
  r.routing_trace = R"({"steps":[]})";
  r.created_at_ms = 1;
  r.started_at_ms = -2;
  r.finished_at_ms = 3;
  r.queue_duration_ms = 4;
  r.execution_duration_ms = 5;
  r.rows_returned = 1LL << 40;
  std::string bytes;
  pack(r, bytes);
  EXPECT_EQ(packed_id(bytes), r.proxy_query_id);
  auto back = unpack(bytes);
  EXPECT_EQ(to_json(back), to_json(r));
  EXPECT_EQ(back.sql, r.sql);
  for (size_t cut = 0; cut < bytes.size(); cut += 7) {
    auto part = unpack(std::string_view(bytes).substr(0, cut)); // must not read past
    EXPECT_LE(part.sql.size(), r.sql.size());
  }
  EXPECT_EQ(packed_id(""), "");
}

TEST(history_ring, counts_queries_and_errors_per_minute_of_arrival) {
  history_ring ring{10};
  auto at = [](const std::string& id, int64_t created_ms, const std::string& status) {
    auto r = record_of(id);
    r.created_at_ms = created_ms;
    r.status = status;
    r.error_message = status == "Success" ? "" : "why";
    return r;
  };
  const int64_t t0 = 1'700'000'040'000; // a minute's start
  ring.record(at("a", t0 + 1'000, "Success"));
  ring.record(at("b", t0 + 59'999, "Failed"));
  ring.record(at("c", t0 + 60'000, "Denied"));
  ring.record(at("d", t0 + 61'000, "Cancelled"));
  ring.record(at("e", t0 - 1, "Failed"));          // before the window
  ring.record(at("f", t0 + 3 * 60'000, "Success")); // after it
  query_buckets b{t0, 60'000, 3};
  ring.count(b);
  EXPECT_EQ(b.queries, (std::vector<uint64_t>{2, 2, 0}));
  EXPECT_EQ(b.errors, (std::vector<uint64_t>{1, 1, 0}));
}

TEST(packed_record, arrival_reads_the_time_and_status_alone) {
  auto r = record_of("q1");
  r.created_at_ms = 12345;
  r.status = "Failed";
  r.routing_trace = std::string(1000, 'x');
  std::string bytes;
  pack(r, bytes);
  auto a = arrival_of(bytes);
  EXPECT_EQ(a.created_at_ms, 12345);
  EXPECT_EQ(a.status, "Failed");
  auto cut = arrival_of(std::string_view{bytes}.substr(0, 20)); // malformed: nothing read
  EXPECT_EQ(cut.created_at_ms, 0);
}
