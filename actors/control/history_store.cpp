#include "actors/control/history_store.hpp"

#include "actors/core/messages.hpp"

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

namespace qf {

namespace {

using self_ptr = caf::stateful_actor<history_store_state>*;

/// Writes batches until the outbox is empty; false when the database failed.
bool drain(self_ptr self) {
  auto& st = self->state;
  bool ok = true;
  for (;;) {
    auto batch = st.outbox->take(st.settings.batch);
    if (batch.empty())
      break;
    try {
      st.table->write(batch);
      st.stats->history_written(batch.size());
      if (st.failing)
        spdlog::info("query history: writing to PostgreSQL again");
      st.failing = false;
    } catch (const std::exception& e) {
      st.outbox->put_back(std::move(batch));
      st.stats->history_write_failed();
      if (!st.failing)
        spdlog::error("query history: cannot write to PostgreSQL, keeping "
                      "records in memory and retrying: {}", e.what());
      st.failing = true;
      ok = false;
      break;
    }
  }
  st.stats->history_dropped(st.outbox->take_dropped());
  st.stats->history_queued(st.outbox->size());
  return ok;
}

/// Answers an admin read: 200 with the JSON, 404 when there is none, 503
/// when the database cannot be asked.
template <class Read>
void answer(const admin_respond& respond, Read read) {
  try {
    std::optional<std::string> json = read();
    if (json)
      respond({200, std::move(*json)});
    else
      respond({404, R"({"error":"no such query"})"});
  } catch (const std::exception& e) {
    spdlog::warn("query history: cannot read from PostgreSQL: {}", e.what());
    respond({503, R"({"error":"the query history database cannot be reached"})"});
  }
}

void purge_if_due(self_ptr self) {
  auto& st = self->state;
  auto now = std::chrono::steady_clock::now();
  if (st.settings.retention_days == 0 || now - st.last_purge < st.settings.purge_every)
    return;
  st.last_purge = now;
  try {
    auto n = st.table->purge_older_than(st.settings.retention_days);
    if (n > 0)
      spdlog::info("query history: purged {} records older than {} days", n,
                   st.settings.retention_days);
  } catch (const std::exception& e) {
    spdlog::warn("query history: retention purge failed: {}", e.what());
  }
}

} // namespace

caf::behavior history_store(self_ptr self, std::shared_ptr<history_outbox> outbox,
                            std::shared_ptr<metrics> stats,
                            history_store_settings settings) {
  auto& st = self->state;
  st.outbox = std::move(outbox);
  st.stats = std::move(stats);
  st.table = std::make_unique<history_table>(settings.url);
  st.settings = std::move(settings);
  // The first purge runs soon after start, then every purge_every.
  st.last_purge = std::chrono::steady_clock::now() - st.settings.purge_every;
  self->send(self, atom::tick::value);
  return {
    [self](atom::tick) {
      bool ok = drain(self);
      purge_if_due(self);
      auto& s = self->state.settings;
      self->delayed_send(self, ok ? s.interval : s.retry_after, atom::tick::value);
    },
    [self](atom::flush) -> uint64_t {
      drain(self);
      return self->state.outbox->size();
    },
    [self](atom::put, std::vector<query_record>& batch) -> caf::result<uint64_t> {
      auto& s = self->state;
      try {
        auto stored = s.table->write(batch);
        s.stats->history_written(stored);
        return static_cast<uint64_t>(stored);
      } catch (const std::exception& e) {
        s.stats->history_write_failed();
        spdlog::warn("query history: cannot store a worker's batch: {}", e.what());
        return make_error(errc::storage_error, "the query history database cannot be written");
      }
    },
    [self](atom::stats, query_buckets& b) -> caf::result<query_buckets> {
      try {
        self->state.table->count(b);
        return std::move(b);
      } catch (const std::exception& e) {
        spdlog::warn("query history: cannot count queries: {}", e.what());
        return make_error(errc::storage_error, "the query history database cannot be read");
      }
    },
    [self](atom::get, history_filter& f, admin_respond& respond) {
      answer(respond, [&] { return self->state.table->list(f); });
    },
    [self](atom::get, std::string& id, admin_respond& respond) {
      answer(respond, [&] { return self->state.table->get(id); });
    },
  };
}

} // namespace qf
