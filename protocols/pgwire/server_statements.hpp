// The statements one server connection holds prepared for clients that
// named theirs: a client's named statement is prepared on whichever pooled
// connection runs it, on first use there, under a name of ours, as
// pgbouncer 1.21 does in transaction mode. PostgreSQL then plans it once
// instead of at every Execute. Least recently used ones are closed past
// `capacity`. Pure: it only writes the Close messages that keep the
// server in step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace qf::pgwire {

/// What a server statement is kept under: its text, and the parameter
/// types it was parsed with when the client declared any.
std::string statement_key(std::string_view sql, const std::vector<uint32_t>& param_types);

class server_statements {
public:
  /// pgbouncer's default max_prepared_statements.
  static constexpr size_t default_capacity = 200;

  explicit server_statements(size_t capacity = default_capacity);

  struct use {
    std::string_view name; // valid until the next call
    bool parse;            // not prepared here yet: Parse it first
  };

  /// The server statement for `sql`. Appends to `out` a Close of each
  /// statement that must go first: one evicted for room, or one whose
  /// preparation failed before.
  use prepare(std::string& out, std::string_view sql);

  /// The batch that parsed `sql` failed, perhaps at its Parse: forget it,
  /// and close the name with the next batch, in case it was prepared.
  void failed(std::string_view sql);

  /// The server says a name of ours is gone (a DEALLOCATE or DISCARD we
  /// did not see): forget them all, closing each with the next batch.
  void forget_all();

  size_t size() const {
    return by_sql_.size();
  }

private:
  struct entry {
    std::string sql;
    std::string name;
  };
  void close_later(std::string name);

  size_t capacity_;
  uint64_t next_ = 0;
  std::list<entry> recent_; // most recently used first
  std::unordered_map<std::string_view, std::list<entry>::iterator> by_sql_;
  std::vector<std::string> to_close_;
};

} // namespace qf::pgwire
