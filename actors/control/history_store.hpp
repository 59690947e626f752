// The HISTORY STORE: drains the outbox into PostgreSQL in batches, off every
// query's path, and purges old records. Detached: libpqxx blocks. A failed
// batch goes back to the outbox and is retried after a pause.
#pragma once

#include "actors/control/history_outbox.hpp"
#include "actors/control/history_table.hpp"
#include "actors/node/metrics.hpp"

#include <caf/stateful_actor.hpp>

#include <chrono>
#include <memory>
#include <string>

namespace qf {

struct history_store_settings {
  std::string url;
  size_t batch = 200;
  std::chrono::milliseconds interval{200};
  std::chrono::milliseconds retry_after{1000};
  uint32_t retention_days = 0; // 0: keep forever
  std::chrono::minutes purge_every{60};
};

struct history_store_state {
  static inline const char* name = "history-store";
  std::shared_ptr<history_outbox> outbox;
  std::shared_ptr<metrics> stats;
  history_store_settings settings;
  std::unique_ptr<history_table> table;
  std::chrono::steady_clock::time_point last_purge;
  bool failing = false; // logged once per outage, not per batch
};

/// Handlers: (tick), INTERNAL; (flush) -> uint64_t: writes what is queued
/// now and answers how many records are still waiting (0 when all went);
/// (put, records) -> uint64_t: stores a worker's batch now, in one
/// transaction, and answers how many were new (the others were stored
/// before); errc::storage_error when the database fails;
/// (get, history_filter, admin_respond): GET /admin/queries from the table;
/// (get, id, admin_respond): one record, 404 when there is none;
/// (stats, query_buckets) -> query_buckets: the buckets counted from the
/// table (errc::storage_error when the database fails).
caf::behavior history_store(caf::stateful_actor<history_store_state>* self,
                            std::shared_ptr<history_outbox> outbox,
                            std::shared_ptr<metrics> stats,
                            history_store_settings settings);

} // namespace qf
