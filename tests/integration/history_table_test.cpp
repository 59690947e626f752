// Query records into a migrated database of the real PostgreSQL server:
// batches, idempotence on the proxy query id, NULLs, previews, retention.
#include "actors/control/history_table.hpp"
#include "actors/control/migrator.hpp"
#include "tests/integration/fresh_database.hpp"

#include <nlohmann/json.hpp>

using namespace qf;

namespace {

class history_table_test : public test_support::fresh_database {
protected:
  void SetUp() override {
    fresh_database::SetUp();
    migrator::migrate(url);
  }
};

query_record record(std::string id, std::string status = "Success") {
  query_record r;
  r.proxy_query_id = std::move(id);
  r.user = "alice";
  r.cluster_group = "bi";
  r.cluster_name = "duck";
  r.engine_type = "duckDb";
  r.protocol = "postgresWire";
  r.sql = "SELECT 1";
  r.status = std::move(status);
  r.routing_trace = R"({"final_group":"bi"})";
  r.created_at_ms = 1'700'000'000'000;
  r.queue_duration_ms = 3;
  r.execution_duration_ms = 7;
  r.rows_returned = 1;
  return r;
}

} // namespace

TEST_F(history_table_test, a_batch_lands_with_its_fields) {
  history_table w{url};
  auto failed = record("q2", "Failed");
  failed.error_message = "boom";
  failed.cluster_name.clear(); // never reached a cluster
  EXPECT_EQ(w.write({record("q1"), failed}), 2u);
  auto rows = query("SELECT proxy_query_id, username, cluster_name, status, error_message, "
                    "routing_trace->>'final_group', execution_duration_ms, "
                    "extract(epoch FROM created_at)::bigint FROM query_records ORDER BY 1");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0][1].as<std::string>(), "alice");
  EXPECT_EQ(rows[0][5].as<std::string>(), "bi");
  EXPECT_EQ(rows[0][6].as<int64_t>(), 7);
  EXPECT_EQ(rows[0][7].as<int64_t>(), 1'700'000'000);
  EXPECT_TRUE(rows[0][4].is_null());
  EXPECT_TRUE(rows[1][2].is_null()) << "an empty field is NULL";
  EXPECT_EQ(rows[1][3].as<std::string>(), "Failed");
  EXPECT_EQ(rows[1][4].as<std::string>(), "boom");
}

TEST_F(history_table_test, the_same_batch_three_times_gives_one_row_each) {
  history_table w{url};
  std::vector<query_record> batch{record("a"), record("b"), record("c")};
  EXPECT_EQ(w.write(batch), 3u);
  batch[0].status = "Cancelled"; // a later record of a known query loses
  EXPECT_EQ(w.write(batch), 0u);
  EXPECT_EQ(w.write(batch), 0u);
  EXPECT_EQ(query("SELECT count(*) FROM query_records")[0][0].as<int>(), 3);
  EXPECT_EQ(query("SELECT status FROM query_records WHERE proxy_query_id = 'a'")[0][0].as<std::string>(),
            "Success");
  // Within one batch, too, the first record of an id wins.
  EXPECT_EQ(w.write({record("d", "Failed"), record("d", "Success")}), 1u);
  EXPECT_EQ(query("SELECT status FROM query_records WHERE proxy_query_id = 'd'")[0][0].as<std::string>(),
            "Failed");
}

TEST_F(history_table_test, worker_fingerprints_and_times_are_stored_on_either_path) {
  history_table w{url};
  auto ran = record("w1");
  ran.worker = "edge-7";
  ran.started_at_ms = 1'700'000'000'250;
  ran.finished_at_ms = 1'700'000'001'500;
  ran.engine_type = "trino";
  ran.backend_query_id = "20261204_101500_00007_abcde";
  ran.external_url = "https://trino.example.com";
  auto other = record("w2");
  other.sql = "SELECT 2"; // the same shape as "SELECT 1"
  EXPECT_EQ(w.write({ran, other}), 2u); // straight into query_records
  // A retried batch with one new record goes the idempotent way.
  auto late = record("w3");
  late.worker = "edge-7";
  EXPECT_EQ(w.write({ran, late}), 1u);
  auto rows = query("SELECT proxy_query_id, worker, query_hash, query_parameterized_hash, "
                    "(extract(epoch FROM started_at) * 1000)::bigint, "
                    "(extract(epoch FROM finished_at) * 1000)::bigint "
                    "FROM query_records ORDER BY 1");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0][1].as<std::string>(), "edge-7");
  EXPECT_TRUE(rows[1][1].is_null());
  EXPECT_EQ(rows[2][1].as<std::string>(), "edge-7");
  EXPECT_NE(rows[0][2].as<int64_t>(), rows[1][2].as<int64_t>());
  EXPECT_EQ(rows[0][3].as<int64_t>(), rows[1][3].as<int64_t>());
  EXPECT_EQ(rows[0][4].as<int64_t>(), 1'700'000'000'250);
  EXPECT_EQ(rows[0][5].as<int64_t>(), 1'700'000'001'500);
  EXPECT_TRUE(rows[1][4].is_null()) << "a time never reached is NULL";
  EXPECT_EQ(rows[2][3].as<int64_t>(), rows[0][3].as<int64_t>());
  history_filter f;
  f.worker = "edge-7";
  auto page = nlohmann::json::parse(w.list(f));
  EXPECT_EQ(page["total"], 2);
  EXPECT_EQ(page["queries"][0]["worker"], "edge-7");
  EXPECT_EQ(page["queries"][0]["queryHash"], std::to_string(rows[0][2].as<int64_t>()));
  // The engine's own id and its cluster's external URL, and the link.
  auto one = nlohmann::json::parse(*w.get("w1"));
  EXPECT_EQ(one["backendQueryId"], "20261204_101500_00007_abcde");
  EXPECT_EQ(one["externalUrl"], "https://trino.example.com");
  EXPECT_EQ(one["backendQueryUrl"],
            "https://trino.example.com/ui/query.html?20261204_101500_00007_abcde");
  history_filter by_id;
  by_id.query_id = "20261204_101500_00007_abcde";
  EXPECT_EQ(nlohmann::json::parse(w.list(by_id))["total"], 1);
}

TEST_F(history_table_test, a_nul_or_malformed_utf8_is_replaced_not_a_batch_that_fails_forever) {
  history_table w{url};
  auto odd = record("odd");
  odd.sql = std::string{"SELECT '"} + '\0' + "' AS nul, '" + "\xE9t\xE9" + "' AS latin1";
  odd.user = "\xFFuser";
  EXPECT_EQ(w.write({odd, record("fine")}), 2u);
  auto rows = query("SELECT sql_preview, username FROM query_records WHERE proxy_query_id = 'odd'");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0][0].as<std::string>(), "SELECT '\xEF\xBF\xBD' AS nul, '\xEF\xBF\xBDt\xEF\xBF\xBD' AS latin1");
  EXPECT_EQ(rows[0][1].as<std::string>(), "\xEF\xBF\xBDuser");
}

TEST_F(history_table_test, text_with_tabs_newlines_backslashes_and_unicode_survives) {
  history_table w{url};
  auto r = record("odd");
  r.sql = "SELECT 'a\tb\nc\\d', 'héllo 日本 🚀'\r\n";
  r.error_message = "\\N is not null";
  w.write({r});
  auto rows = query("SELECT sql_preview, error_message FROM query_records");
  EXPECT_EQ(rows[0][0].as<std::string>(), r.sql);
  EXPECT_EQ(rows[0][1].as<std::string>(), r.error_message);
}

TEST_F(history_table_test, retention_purges_old_records_only) {
  history_table w{url};
  auto old = record("old");
  old.created_at_ms = 1'000'000'000'000; // 2001
  auto fresh = record("fresh");
  fresh.created_at_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  w.write({old, fresh});
  EXPECT_EQ(w.purge_older_than(30), 1u);
  EXPECT_EQ(query("SELECT proxy_query_id FROM query_records")[0][0].as<std::string>(), "fresh");
}

TEST_F(history_table_test, a_failed_write_reconnects_on_the_next) {
  history_table w{url};
  w.write({record("before")});
  // Every connection of the database is cut, as by a restart.
  admin("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '" + name + "'");
  bool failed = false;
  try {
    w.write({record("lost")});
  } catch (const std::exception&) {
    failed = true; // the caller keeps the batch and retries
  }
  if (failed) {
    EXPECT_EQ(w.write({record("lost")}), 1u);
  }
  EXPECT_EQ(query("SELECT count(*) FROM query_records")[0][0].as<int>(), 2);
}


TEST_F(history_table_test, the_admin_search_filters_pages_and_finds_by_id) {
  history_table t{url};
  std::vector<query_record> batch;
  for (int i = 0; i < 5; ++i) {
    auto r = record("s" + std::to_string(i), i % 2 ? "Failed" : "Success");
    r.sql = "SELECT " + std::to_string(i) + " FROM orders";
    r.user = i < 3 ? "alice" : "bob";
    r.created_at_ms = 1'700'000'000'000 + i * 1000;
    r.started_at_ms = r.created_at_ms + 5;
    batch.push_back(r);
  }
  t.write(batch);
  auto all = nlohmann::json::parse(t.list({}));
  EXPECT_EQ(all["total"], 5);
  EXPECT_EQ(all["queries"][0]["proxyQueryId"], "s4") << "newest first";
  EXPECT_EQ(all["queries"][0]["startedAtMs"], 1'700'000'004'005);
  EXPECT_EQ(all["queries"][0]["routingTrace"]["final_group"], "bi");
  history_filter f;
  f.user = "alice";
  f.status = "Success";
  auto some = nlohmann::json::parse(t.list(f));
  EXPECT_EQ(some["total"], 2); // s0 and s2
  f = {};
  f.search = "SELECT 3 ";
  EXPECT_EQ(nlohmann::json::parse(t.list(f))["queries"][0]["proxyQueryId"], "s3");
  f = {};
  f.from_ms = 1'700'000'001'000;
  f.to_ms = 1'700'000'003'000;
  EXPECT_EQ(nlohmann::json::parse(t.list(f))["total"], 3);
  f = {};
  f.limit = 2;
  f.offset = 2;
  auto page = nlohmann::json::parse(t.list(f));
  EXPECT_EQ(page["total"], 5);
  ASSERT_EQ(page["queries"].size(), 2u);
  EXPECT_EQ(page["queries"][0]["proxyQueryId"], "s2");
  auto one = t.get("s1");
  ASSERT_TRUE(one);
  EXPECT_EQ(nlohmann::json::parse(*one)["status"], "Failed");
  EXPECT_FALSE(t.get("nope"));
}
