// Workers' history into the control plane, side by side in one run on one
// PostgreSQL (QF_PG_URL):
// (a) raw COPY of the rows into query_records, 200 per transaction, on one
//     connection: the floor any ingest pays;
// (b) POST /worker/query-records to a control plane in this process, from
//     WORKERS concurrent callers (each a worker of its own name), batches of
//     200 encoded beforehand as a worker's spool would send them.
// Each gets a freshly migrated database. Prints records/s and the ratio.
// Usage: history_uplink_bench [RECORDS=100000] [WORKERS=10]
#include "actors/control/migrator.hpp"
#include "protocols/common/temporal.hpp"
#include "protocols/worker_api/history_batch.hpp"
#include "engines/http_client.hpp"
#include "tests/support/fleet.hpp"

#include <pqxx/pqxx>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <thread>

using namespace qf;
using namespace qf::test_support;
using clock_type = std::chrono::steady_clock;

namespace {

std::string server_url() {
  auto* url = std::getenv("QF_PG_URL");
  return url ? url : "postgres://postgres@127.0.0.1:15432/postgres";
}

std::string fresh_database(const std::string& name, bool migrated) {
  auto server = server_url();
  {
    pqxx::connection c{server};
    pqxx::nontransaction tx{c};
    tx.exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
    tx.exec("CREATE DATABASE " + name);
  }
  auto url = server.substr(0, server.rfind('/') + 1) + name;
  if (migrated)
    migrator::migrate(url);
  return url;
}

void drop_database(const std::string& name) {
  pqxx::connection c{server_url()};
  pqxx::nontransaction tx{c};
  tx.exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
}

query_record record(size_t i) {
  query_record r;
  r.proxy_query_id = "20261204_101500_" + std::to_string(i) + "_bench";
  r.user = "bench";
  r.cluster_group = "bi";
  r.cluster_name = "duck";
  r.engine_type = "duckDb";
  r.protocol = "trinoHttp";
  r.sql = "SELECT * FROM orders WHERE id = " + std::to_string(i) + " AND region = 'emea'";
  r.status = "Success";
  r.routing_trace = R"({"group":"bi","usedFallback":false,"trace":[]})";
  r.created_at_ms = 1'764'843'300'000 + static_cast<int64_t>(i);
  r.started_at_ms = r.created_at_ms + 1;
  r.finished_at_ms = r.created_at_ms + 4;
  r.execution_duration_ms = 3;
  r.rows_returned = 1;
  worker_api::fill_fingerprints(r);
  return r;
}

double raw_copy(const std::string& url, const std::vector<query_record>& records,
                size_t workers) {
  pqxx::connection c{url};
  // Every column the ingest fills, with the same values.
  const std::vector<std::string> cols{
    "proxy_query_id", "username", "cluster_group", "cluster_name", "engine_type",
    "frontend_protocol", "sql_preview", "status", "routing_trace", "queue_duration_ms",
    "execution_duration_ms", "rows_returned", "worker", "query_hash",
    "query_parameterized_hash", "created_at", "started_at", "finished_at"};
  auto start = clock_type::now();
  for (size_t done = 0; done < records.size();) {
    pqxx::work tx{c};
    pqxx::stream_to copy{tx, "query_records", cols};
    auto worker = "bench-w" + std::to_string((done / worker_api::max_history_records) % workers);
    for (size_t k = 0; k < worker_api::max_history_records && done < records.size(); ++k, ++done) {
      const auto& r = records[done];
      copy << std::make_tuple(r.proxy_query_id, r.user, r.cluster_group, r.cluster_name,
                              r.engine_type, r.protocol, r.sql, r.status, r.routing_trace,
                              r.queue_duration_ms, r.execution_duration_ms, r.rows_returned,
                              worker, r.query_hash, r.query_parameterized_hash,
                              utc_text(r.created_at_ms, utc_style::postgres),
                              utc_text(r.started_at_ms, utc_style::postgres),
                              utc_text(r.finished_at_ms, utc_style::postgres));
    }
    copy.complete();
    tx.commit();
  }
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

double through_ingest(const std::string& url, const std::vector<query_record>& records,
                      size_t workers) {
  fleet f{{"clusters:\n  duck: { engine: duckDb }\nclusterGroups:\n  bi: { members: [duck] }\n",
           url, ""}};
  std::vector<std::string> bodies;
  for (size_t at = 0; at < records.size(); at += worker_api::max_history_records) {
    auto end = std::min(records.size(), at + worker_api::max_history_records);
    bodies.push_back(worker_api::encode_history_batch(
      std::vector<query_record>(records.begin() + static_cast<std::ptrdiff_t>(at),
                                records.begin() + static_cast<std::ptrdiff_t>(end))));
  }
  auto target = engines::parse_http_url("http://127.0.0.1:"
                                        + std::to_string(f.control_plane().admin_port())
                                        + "/worker/query-records");
  std::atomic<size_t> next{0};
  std::atomic<size_t> failed{0};
  std::vector<std::thread> callers;
  auto start = clock_type::now();
  for (size_t w = 0; w < workers; ++w)
    callers.emplace_back([&, w] {
      engines::http_headers headers{{"Authorization", std::string{"Bearer "} + fleet_secret},
                                    {"Content-Type", "application/json"},
                                    {"X-QueryFlux-Worker", "bench-w" + std::to_string(w)}};
      // One client per caller, as a worker keeps one: a client's TLS
      // context costs more to make than a batch to send.
      engines::http_client client{std::chrono::seconds(40)};
      for (size_t i; (i = next++) < bodies.size();) {
        try {
          if (client.send("POST", *target, headers, bodies[i]).status != 200)
            ++failed;
        } catch (const std::exception&) {
          ++failed;
        }
      }
    });
  for (auto& c : callers)
    c.join();
  auto secs = std::chrono::duration<double>(clock_type::now() - start).count();
  pqxx::connection c{url};
  pqxx::nontransaction tx{c};
  auto stored = tx.exec1("SELECT count(*) FROM query_records")[0].as<size_t>();
  if (failed > 0 || stored != records.size())
    std::fprintf(stderr, "ingest: %zu batches failed, %zu of %zu records stored\n", failed.load(),
                 stored, records.size());
  return secs;
}

} // namespace

int main(int argc, char** argv) {
  spdlog::set_level(spdlog::level::warn);
  size_t n = argc > 1 ? std::stoul(argv[1]) : 100000;
  size_t workers = argc > 2 ? std::stoul(argv[2]) : 10;
  std::vector<query_record> records;
  records.reserve(n);
  for (size_t i = 0; i < n; ++i)
    records.push_back(record(i));
  auto raw = raw_copy(fresh_database("qf_bench_uplink_raw", true), records, workers);
  auto ingest = through_ingest(fresh_database("qf_bench_uplink_cp", false), records, workers);
  drop_database("qf_bench_uplink_raw");
  drop_database("qf_bench_uplink_cp");
  std::printf("history uplink ingest, %zu records in batches of 200, %zu workers\n", n, workers);
  std::printf("  raw COPY into query_records        %8.0f records/s\n", n / raw);
  std::printf("  POST /worker/query-records         %8.0f records/s  %5.2fx raw COPY\n",
              n / ingest, raw / ingest);
  return 0;
}
