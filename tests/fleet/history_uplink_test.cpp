// Workers' query history on its way to the control plane: spooled while the
// link is cut and delivered once when it is back, the oldest dropped and
// counted when the spool is full, the SQL masked by the snapshot's policy,
// and the control plane's ingest: idempotent, attributed to the calling
// worker, all or nothing for a batch.
#include "tests/fleet/fleet_fixture.hpp"

#include <gtest/gtest.h>
#include <pqxx/pqxx>

#include <set>

using namespace qf;
using namespace qf::test_support;

namespace {

/// The control plane's history of one worker.
nlohmann::json history_of(fleet& f, const std::string& worker) {
  return f.admin("GET", "/admin/queries?limit=1000&worker=" + worker).json();
}

size_t total_of(fleet& f, const std::string& worker) {
  auto page = history_of(f, worker);
  return page.is_object() ? page.value("total", size_t{0}) : 0;
}

std::multiset<std::string> sql_of(fleet& f, const std::string& worker) {
  std::multiset<std::string> out;
  auto page = history_of(f, worker);
  for (const auto& q : page["queries"])
    out.insert(q["sql"].get<std::string>());
  return out;
}

nlohmann::json uplink(fleet& f, size_t i) {
  return f.status(i)["historyUplink"];
}

http_answer post_batch(fleet& f, const std::string& body, const std::string& worker = "direct-1",
                       const std::string& secret = fleet_secret) {
  engines::http_headers headers{{"Authorization", "Bearer " + secret},
                                {"Content-Type", "application/json"}};
  if (!worker.empty())
    headers.emplace_back("X-QueryFlux-Worker", worker);
  return http_request("POST",
                      "http://127.0.0.1:" + std::to_string(f.control_plane().admin_port())
                        + "/worker/query-records",
                      headers, body);
}

std::string record_json(const std::string& id, const std::string& extra = {}) {
  return R"({"proxyQueryId":")" + id
         + R"(","protocol":"trinoHttp","status":"Success","sql":"SELECT 1","createdAtMs":1764843300000)"
         + extra + "}";
}

std::string batch_of(const std::vector<std::string>& records, int version = 1) {
  std::string out = "{\"schemaVersion\":" + std::to_string(version) + ",\"records\":[";
  for (size_t i = 0; i < records.size(); ++i)
    out += (i ? "," : "") + records[i];
  return out + "]}";
}

} // namespace

TEST_F(fleet_test, records_spooled_while_the_link_is_cut_arrive_once_when_it_is_back) {
  fleet f{{sqlite_fleet(1), url, ""}};
  f.add_worker(worker_on_own_limits("w1", 1));
  ASSERT_TRUE(eventually([&] { return all_run(f, f.served_revision()); }));
  auto port = f.worker(0).trino_port();
  ASSERT_EQ(trino_query(port, "SELECT v + 1 FROM t"), nlohmann::json::parse("[[2]]"));
  ASSERT_TRUE(eventually([&] { return total_of(f, "w1") == 1; })) << history_of(f, "w1").dump();

  f.link(0).cut();
  for (int i = 2; i <= 6; ++i)
    ASSERT_EQ(trino_query(port, "SELECT v + " + std::to_string(i) + " FROM t"),
              nlohmann::json::array({nlohmann::json::array({1 + i})}));
  ASSERT_TRUE(eventually([&] {
    auto u = uplink(f, 0);
    return u["queued"] == 5 && u["lastError"].is_string();
  })) << uplink(f, 0).dump();
  EXPECT_EQ(uplink(f, 0)["sent"], 1);
  EXPECT_EQ(total_of(f, "w1"), 1u);

  f.link(0).restore();
  ASSERT_TRUE(eventually([&] { return total_of(f, "w1") == 6; }, 60s)) << uplink(f, 0).dump();
  ASSERT_TRUE(eventually([&] {
    auto u = uplink(f, 0);
    return u["queued"] == 0 && u["sent"] == 6 && u["lastError"].is_null();
  })) << uplink(f, 0).dump();
  EXPECT_EQ(uplink(f, 0)["dropped"], 0);
  std::multiset<std::string> want;
  for (int i = 1; i <= 6; ++i)
    want.insert("SELECT v + " + std::to_string(i) + " FROM t");
  EXPECT_EQ(sql_of(f, "w1"), want);
  auto page = history_of(f, "w1");
  for (const auto& q : page["queries"]) {
    EXPECT_EQ(q["worker"], "w1");
    EXPECT_TRUE(q["queryHash"].is_string()) << q.dump();
  }
  // Once per query in the table itself.
  pqxx::connection db{url};
  pqxx::work tx{db};
  auto row = tx.exec1("SELECT count(*), count(DISTINCT proxy_query_id), "
                      "count(query_parameterized_hash) FROM query_records WHERE worker = 'w1'");
  EXPECT_EQ(row[0].as<int>(), 6);
  EXPECT_EQ(row[1].as<int>(), 6);
  EXPECT_EQ(row[2].as<int>(), 6);
  EXPECT_EQ(metric_value("127.0.0.1", f.worker(0).admin_port(), "queryflux_history_uplink_sent_total"),
            6);
}

TEST_F(fleet_test, a_full_spool_drops_its_oldest_records_and_counts_them) {
  fleet f{{sqlite_fleet(1), url, ""}};
  auto w = worker_on_own_limits("small", 1);
  w.node_yaml += "history: { spoolMaxRecords: 3 }\n";
  f.add_worker(w);
  ASSERT_TRUE(eventually([&] { return all_run(f, f.served_revision()); }));
  f.link(0).cut();
  auto port = f.worker(0).trino_port();
  for (int i = 1; i <= 6; ++i)
    ASSERT_EQ(trino_query(port, "SELECT v + " + std::to_string(i) + " FROM t"),
              nlohmann::json::array({nlohmann::json::array({1 + i})}));
  ASSERT_TRUE(eventually([&] {
    auto u = uplink(f, 0);
    return u["queued"] == 3 && u["dropped"] == 3;
  })) << uplink(f, 0).dump();
  EXPECT_EQ(metric_value("127.0.0.1", f.worker(0).admin_port(),
                         "queryflux_history_uplink_dropped_total{reason=\"overflow\"}"),
            3);
  f.link(0).restore();
  ASSERT_TRUE(eventually([&] { return total_of(f, "small") == 3; }, 60s)) << uplink(f, 0).dump();
  EXPECT_EQ(sql_of(f, "small"),
            (std::multiset<std::string>{"SELECT v + 4 FROM t", "SELECT v + 5 FROM t",
                                        "SELECT v + 6 FROM t"}));
}

TEST_F(fleet_test, the_snapshot_policy_masks_literals_before_a_record_leaves_its_worker) {
  control_plane_options cp{sqlite_fleet(1), url, ""};
  cp.worker_api_yaml = "history: { redaction: maskLiterals }";
  fleet f{cp};
  f.add_worker(worker_on_own_limits("masked", 1));
  ASSERT_TRUE(eventually([&] { return all_run(f, f.served_revision()); }));
  auto port = f.worker(0).trino_port();
  ASSERT_EQ(trino_query(port, "SELECT v FROM t WHERE 'secret-1' <> 'x' AND v < 99"),
            nlohmann::json::parse("[[1]]"));
  ASSERT_EQ(trino_query(port, "SELECT v FROM t WHERE 'secret-2' <> 'y' AND v < 7"),
            nlohmann::json::parse("[[1]]"));
  ASSERT_TRUE(eventually([&] { return total_of(f, "masked") == 2; })) << uplink(f, 0).dump();
  auto queries = history_of(f, "masked")["queries"];
  for (const auto& q : queries)
    EXPECT_EQ(q["sql"], "SELECT v FROM t WHERE ? <> ? AND v < ?") << q.dump();
  // One shape, two statements.
  EXPECT_EQ(queries[0]["queryParameterizedHash"], queries[1]["queryParameterizedHash"]);
  EXPECT_NE(queries[0]["queryHash"], queries[1]["queryHash"]);
  EXPECT_EQ(f.status(0)["history"]["redaction"], "maskLiterals");
}

TEST_F(fleet_test, ingest_keeps_the_first_record_per_query_and_refuses_bad_batches_whole) {
  fleet f{{sqlite_fleet(1), url, ""}};
  auto first = post_batch(f, batch_of({record_json("q-1"), record_json("q-2")}));
  ASSERT_EQ(first.status, 200) << first.body;
  EXPECT_EQ(first.json(), nlohmann::json::parse(R"({"accepted":2,"duplicates":0})"));
  auto again = post_batch(f, batch_of({record_json("q-1"), record_json("q-2")}));
  EXPECT_EQ(again.json(), nlohmann::json::parse(R"({"accepted":0,"duplicates":2})"));
  // The caller's name, not the body's; the first record of an id wins.
  auto mixed = post_batch(f, batch_of({record_json("q-3", R"(,"worker":"evil")"),
                                       record_json("q-1", R"(,"sql":"SELECT 2")")}));
  EXPECT_EQ(mixed.json(), nlohmann::json::parse(R"({"accepted":1,"duplicates":1})"));
  EXPECT_EQ(total_of(f, "direct-1"), 3u);
  EXPECT_EQ(total_of(f, "evil"), 0u);
  EXPECT_EQ(sql_of(f, "direct-1"),
            (std::multiset<std::string>{"SELECT 1", "SELECT 1", "SELECT 1"}));

  // Nothing of a refused batch is stored.
  auto bad = post_batch(f, batch_of({record_json("q-4"), R"({"proxyQueryId":"q-5"})"}));
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.json()["error"], "records[1].protocol: required");
  auto future = post_batch(f, batch_of({record_json("q-4")}, 2));
  EXPECT_EQ(future.status, 400);
  EXPECT_EQ(future.json()["code"], "unsupportedSchemaVersion");
  EXPECT_EQ(post_batch(f, "{not json").status, 400);
  EXPECT_EQ(post_batch(f, batch_of({record_json("q-4")}), "").status, 400);
  EXPECT_EQ(post_batch(f, batch_of({record_json("q-4")}), "bad name!").status, 400);
  EXPECT_EQ(post_batch(f, batch_of({record_json("q-4")}), "direct-1", "wrong-secret").status, 401);
  EXPECT_EQ(post_batch(f, std::string(9 * 1024 * 1024, ' ')).status, 413);
  // A full batch of long statements (some MiB) is taken whole.
  std::vector<std::string> big;
  for (int i = 0; i < 200; ++i)
    big.push_back(record_json("big-" + std::to_string(i),
                              R"(,"sql":"SELECT ')" + std::string(8000, 'x') + R"('")"));
  auto large = post_batch(f, batch_of(big), "direct-2");
  ASSERT_EQ(large.status, 200) << large.body.substr(0, 300);
  EXPECT_EQ(large.json()["accepted"], 200);
  EXPECT_EQ(f.worker_api("/worker/query-records").status, 405);
  EXPECT_EQ(total_of(f, "direct-1"), 3u);
  EXPECT_EQ(metric_value("127.0.0.1", f.control_plane().admin_port(),
                         "queryflux_history_ingested_records_total{result=\"duplicate\"}"),
            3);
}

TEST_F(fleet_test, a_standalone_without_postgres_keeps_workers_records_in_memory_once) {
  fleet f{{sqlite_fleet(1), "", ""}};
  auto body = batch_of({record_json("m-1"), record_json("m-2")});
  EXPECT_EQ(post_batch(f, body).json(), nlohmann::json::parse(R"({"accepted":2,"duplicates":0})"));
  EXPECT_EQ(post_batch(f, body).json(), nlohmann::json::parse(R"({"accepted":0,"duplicates":2})"));
  EXPECT_EQ(total_of(f, "direct-1"), 2u);
}
