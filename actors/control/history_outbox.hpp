// Finished query records on their way to PostgreSQL. Queries push without
// a message (as into the ring); the history store takes batches. Bounded:
// while the database is unreachable the oldest records are dropped first,
// and counted, rather than letting memory grow without end.
#pragma once

#include "actors/core/messages.hpp"

#include <atomic>
#include <deque>
#include <mutex>
#include <vector>

namespace qf {

class history_outbox {
public:
  explicit history_outbox(size_t capacity) : capacity_(capacity) {
    // nop
  }

  void push(query_record r) {
    std::lock_guard guard{mtx_};
    if (records_.size() >= capacity_) {
      records_.pop_front();
      ++dropped_;
    }
    records_.push_back(std::move(r));
  }

  /// Up to max records, oldest first.
  std::vector<query_record> take(size_t max) {
    std::lock_guard guard{mtx_};
    auto n = std::min(max, records_.size());
    std::vector<query_record> out(std::make_move_iterator(records_.begin()),
                                  std::make_move_iterator(records_.begin() + static_cast<std::ptrdiff_t>(n)));
    records_.erase(records_.begin(), records_.begin() + static_cast<std::ptrdiff_t>(n));
    return out;
  }

  /// Puts back a batch that could not be written, ahead of newer records.
  void put_back(std::vector<query_record> batch) {
    std::lock_guard guard{mtx_};
    for (auto i = batch.rbegin(); i != batch.rend(); ++i) {
      if (records_.size() >= capacity_) {
        ++dropped_; // full of newer records: these older ones give way
        continue;
      }
      records_.push_front(std::move(*i));
    }
  }

  size_t size() const {
    std::lock_guard guard{mtx_};
    return records_.size();
  }

  /// Records dropped since the last call.
  uint64_t take_dropped() {
    std::lock_guard guard{mtx_};
    return std::exchange(dropped_, 0);
  }

private:
  size_t capacity_;
  mutable std::mutex mtx_;
  std::deque<query_record> records_;
  uint64_t dropped_ = 0;
};

} // namespace qf
