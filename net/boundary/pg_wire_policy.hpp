// What the PostgreSQL wire session tells wire_session_base (the CRTP
// statics it asks of Derived) and what it knows of PostgreSQL's SQL: which
// groups its fast lane serves and which lane pool, whether plain
// statements pipeline, what reads or leaves server-session state, and the
// errors (with their SQLSTATEs) it answers in its clients' terms.
#pragma once

#include "actors/data/cluster_state.hpp"
#include "actors/data/group_gate.hpp"
#include "engines/engine.hpp"
#include "engines/lane_pool.hpp"
#include "protocols/sql/statements.hpp"

#include <memory>
#include <string>
#include <string_view>

namespace qf {

struct pg_wire_policy {
  static bool lane_serves(const group_gate& gate) {
    return gate.postgres_only();
  }
  /// Plain statements of different clients share server connections
  /// (pipelineDepth).
  static constexpr bool pipelines_statements = true;
  static const std::shared_ptr<engines::pg_lane_pool>& lane_of(const cluster_state& cluster) {
    return cluster.lane;
  }
  static engines::engine_error cancelled_error() {
    return engines::engine_error(engines::error_kind::cancelled,
                                 "canceling statement due to user request", "57014");
  }
  static engines::engine_error connect_error(const std::string& why) {
    return engines::engine_error(engines::error_kind::internal, why, "08001");
  }
  /// lastval() and currval() read the sequences the server session
  /// advanced, where the client's statements advanced them; a statement
  /// that advances them itself reads its own.
  static bool reads_previous_statements_state(std::string_view sql, std::string_view kw) {
    bool plain = kw == "SELECT" || kw == "WITH" || kw == "VALUES" || kw == "INSERT" || kw == "UPDATE"
                 || kw == "DELETE";
    return plain && sql::calls_function(sql, {"lastval", "currval"}, false)
           && !sql::calls_function(sql, {"nextval", "setval"}, false);
  }
  /// What may advance a sequence: a write (a serial's default, a
  /// trigger), or a function (nextval itself, or one that calls it).
  static bool may_leave_state_behind(std::string_view sql, std::string_view kw) {
    return kw == "INSERT" || kw == "UPDATE" || kw == "DELETE" || kw == "MERGE" || kw == "COPY"
           || kw == "CALL" || kw == "DO" || sql.find('(') != std::string_view::npos;
  }
  static engines::engine_error previous_connection_gone_error() {
    return engines::engine_error(
      engines::error_kind::user,
      "lastval() and currval() read the sequences of this client's server connection, and "
      "another client's statement has run on the pooled connection this client's last "
      "statement used: run both in one transaction, or use INSERT ... RETURNING",
      "55000"); // object_not_in_prerequisite_state, as lastval() before any nextval()
  }
  static constexpr std::string_view letting_state_go = "DISCARD ALL lets a client's go";
  static engines::engine_error pinned_out_error(const std::string& why) {
    return engines::engine_error(engines::error_kind::user, why, "53300"); // too_many_connections
  }

  /// DEALLOCATE [PREPARE] ALL. Asked per statement: most are told by their
  /// first character.
  static bool deallocates_all(std::string_view sql) {
    auto first = sql.find_first_not_of(" \t\r\n(");
    if (first == std::string_view::npos)
      return false;
    char c = sql[first];
    if (c != 'd' && c != 'D' && c != '-' && c != '/')
      return false;
    auto words = sql::leading_keywords(sql, 3);
    return words == "DEALLOCATE ALL" || words == "DEALLOCATE PREPARE ALL";
  }
};

} // namespace qf
