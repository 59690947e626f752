// Query history ingest, side by side in one run on one PostgreSQL:
// (a) raw COPY of the same rows into query_records, 200 per transaction;
// (b) the same number of records pushed into the history outbox and drained
//     by the history_store actor (batch 200, idempotent insert).
// Each gets a freshly migrated database. Prints records/s and the ratio.
// Usage: history_ingest_bench POSTGRES_URL [RECORDS=100000]
#include "actors/control/history_store.hpp"
#include "actors/control/migrator.hpp"
#include "actors/node/metrics.hpp"

#include <caf/all.hpp>
#include <pqxx/pqxx>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

using namespace qf;
using clock_type = std::chrono::steady_clock;

namespace {

std::string database_url(const std::string& server, const std::string& name) {
  return server.substr(0, server.rfind('/') + 1) + name;
}

std::string fresh_database(const std::string& server, const std::string& name) {
  pqxx::connection c{server};
  pqxx::nontransaction tx{c};
  tx.exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
  tx.exec("CREATE DATABASE " + name);
  tx.commit();
  auto url = database_url(server, name);
  migrator::migrate(url);
  return url;
}

query_record record(size_t i) {
  query_record r;
  r.proxy_query_id = "bench_" + std::to_string(i);
  r.user = "bench";
  r.cluster_group = "bi";
  r.cluster_name = "duck";
  r.engine_type = "duckDb";
  r.protocol = "trinoHttp";
  r.sql = "SELECT * FROM orders WHERE id = " + std::to_string(i);
  r.status = "Success";
  r.routing_trace = R"({"final_group":"bi","used_fallback":false})";
  r.created_at_ms = 1'700'000'000'000 + static_cast<int64_t>(i);
  r.execution_duration_ms = 3;
  r.rows_returned = 1;
  return r;
}

double raw_copy(const std::string& url, size_t n) {
  pqxx::connection c{url};
  const std::vector<std::string> cols{"proxy_query_id", "username", "cluster_group",
                                      "cluster_name", "engine_type", "frontend_protocol",
                                      "sql_preview", "status", "routing_trace",
                                      "execution_duration_ms", "rows_returned"};
  auto start = clock_type::now();
  for (size_t done = 0; done < n;) {
    pqxx::work tx{c};
    pqxx::stream_to copy{tx, "query_records", cols};
    for (size_t k = 0; k < 200 && done < n; ++k, ++done) {
      auto r = record(done);
      copy << std::make_tuple(r.proxy_query_id, r.user, r.cluster_group, r.cluster_name,
                              r.engine_type, r.protocol, r.sql, r.status, r.routing_trace,
                              r.execution_duration_ms, r.rows_returned);
    }
    copy.complete();
    tx.commit();
  }
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

double through_store(const std::string& url, size_t n) {
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  auto outbox = std::make_shared<history_outbox>(n + 1);
  auto stats = std::make_shared<metrics>();
  history_store_settings settings;
  settings.url = url;
  std::vector<query_record> records;
  records.reserve(n);
  for (size_t i = 0; i < n; ++i)
    records.push_back(record(i));
  auto start = clock_type::now();
  for (auto& r : records)
    outbox->push(std::move(r)); // as queries do: no message
  auto store = sys.spawn<caf::detached>(history_store, outbox, stats, settings);
  pqxx::connection c{url};
  for (;;) {
    pqxx::nontransaction tx{c};
    auto written = tx.exec1("SELECT count(*) FROM query_records")[0].as<size_t>();
    tx.commit();
    if (written >= n)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  auto secs = std::chrono::duration<double>(clock_type::now() - start).count();
  caf::anon_send_exit(store, caf::exit_reason::user_shutdown);
  return secs;
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s POSTGRES_URL [RECORDS]\n", argv[0]);
    return 2;
  }
  std::string server = argv[1];
  size_t n = argc > 2 ? std::stoul(argv[2]) : 100000;
  auto raw_url = fresh_database(server, "qf_bench_history_raw");
  auto store_url = fresh_database(server, "qf_bench_history_store");
  auto raw = raw_copy(raw_url, n);
  auto store = through_store(store_url, n);
  for (const char* name : {"qf_bench_history_raw", "qf_bench_history_store"}) {
    pqxx::connection c{server};
    pqxx::nontransaction tx{c};
    tx.exec(std::string{"DROP DATABASE IF EXISTS "} + name + " WITH (FORCE)");
    tx.commit();
  }
  std::printf("history ingest, %zu records, batches of 200\n", n);
  std::printf("  raw COPY into query_records   %8.0f records/s\n", n / raw);
  std::printf("  history_store actor           %8.0f records/s  %5.2fx raw COPY\n", n / store,
              raw / store);
  return 0;
}
