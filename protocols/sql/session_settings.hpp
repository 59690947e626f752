// The settings a client gave its session with SET, kept by the gateway so
// that whichever pooled connection runs its next statement can be given
// them first (the SET statements replayed), instead of the connection
// staying with that client: clients that SET on connect (ORMs do) stay
// multiplexed, as ProxySQL keeps them for the variables it tracks.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace qf::sql {

/// The setting a SET or RESET outside a transaction names when replaying
/// the statement gives a connection that setting: "search_path" of "SET
/// search_path TO a" (and of "SET SCHEMA 'a'"), "timezone" of "SET TIME
/// ZONE 9", "role" of "SET ROLE r", "all" of "RESET ALL". Names are
/// lowercased unless quoted. Empty when not: SET LOCAL, SET TRANSACTION,
/// SET SESSION AUTHORIZATION or CHARACTERISTICS, a user variable, not a
/// SET or RESET.
std::string replayable_setting(std::string_view statement);

/// The settings a PostgreSQL startup packet's parameters give the session,
/// by name: those that are not the connection's own (user, database,
/// replication, protocol extensions), nor the gateway's (application_name,
/// client_encoding), and each `-c name=value` / `--name=value` in options
/// (a backslash escapes the next character).
std::vector<std::pair<std::string, std::string>>
startup_settings(const std::map<std::string, std::string>& params);

class session_settings {
public:
  /// Whether replayable_setting() names one.
  static bool replayable(std::string_view statement) {
    return !replayable_setting(statement).empty();
  }

  /// A SET or RESET with a replayable_setting() that succeeded, as its
  /// client's session sees it: RESET goes back to the startup value.
  void apply(std::string_view statement);

  /// The same as the server connection it ran on sees it: RESET goes back
  /// to that connection's own startup value, none of the client's.
  void apply_on_server(std::string_view statement);

  /// A setting the client gave in its startup packet (a parameter, or
  /// `-c name=value` in options), as PostgreSQL takes it: the value raw,
  /// through set_config(). It is also what RESET and DISCARD ALL go back
  /// to, as in PostgreSQL.
  void start_with(std::string_view name, std::string_view value);

  /// DISCARD ALL: back to the startup settings.
  void discard() {
    entries_ = startup_;
  }

  /// The statements that give a connection whose settings are `from`
  /// these instead (changed ones set, missing ones reset), as one
  /// PostgreSQL Query, which runs them as one transaction; empty when the
  /// two are alike.
  std::string prelude_from(const session_settings& from) const;
  /// A connection has all of them once the prelude ran: it is one step.
  session_settings after_prelude(const session_settings&) const {
    return *this;
  }

  bool empty() const {
    return entries_.empty();
  }

  /// The same settings (whatever the startup ones were).
  friend bool operator==(const session_settings& a, const session_settings& b) {
    return a.entries_ == b.entries_;
  }

private:
  /// Name, and the statement that set it, in the order first set.
  std::vector<std::pair<std::string, std::string>> entries_;
  std::vector<std::pair<std::string, std::string>> startup_; // start_with()'s
};

/// The database a MySQL `USE db` (or USE `d``b`) names; none for another
/// statement.
std::optional<std::string> mysql_used_database(std::string_view statement);

/// `USE` of that database, quoted.
std::string mysql_use(std::string_view database);

/// A MySQL SET's assignments ("a = 1, SESSION b = 'x,y'"), split at the
/// commas outside quotes and parentheses, each trimmed.
std::vector<std::string_view> mysql_assignments(std::string_view set_body);

/// An assignment's variable, lowercased and without SESSION, LOCAL,
/// @@SESSION., @@LOCAL. or @@ ("time_zone" of "@@SESSION.time_zone :=
/// 'UTC'"), and its value; an empty name when it assigns nothing.
std::pair<std::string, std::string_view> mysql_assignment(std::string_view item);

/// The same for MySQL: the session variables a client SET (`SET time_zone
/// = '+09:00', SESSION sql_mode = 'ANSI'`), each with its assignment,
/// given to a connection as one SET (`name = DEFAULT`, the global value,
/// for those the connection has and the client has not).
class mysql_variables {
public:
  /// Whether the SET can be replayed: every assignment sets a session
  /// variable to a value that does not read another variable (which would
  /// read the connection's, not the client's). Not: user variables,
  /// GLOBAL, NAMES, TRANSACTION. And a USE.
  static bool replayable(std::string_view statement);

  /// A replayable() SET or USE that succeeded.
  void apply(std::string_view statement);
  /// A variable the client's login gave its session (`sql_mode` with
  /// IGNORE_SPACE): `value` may read the server's globals.
  void start_with(std::string name, std::string_view value);

  /// The default database: the client's (named at login, by COM_INIT_DB
  /// or USE), or the one a connection is in. Empty: none named.
  void use(std::string database) {
    database_ = std::move(database);
  }
  const std::string& database() const {
    return database_;
  }
  void apply_on_server(std::string_view statement) {
    apply(statement);
  }

  /// COM_RESET_CONNECTION: none.
  void discard() {
    entries_.clear();
  }

  /// What gives a connection whose variables are `from` these: its USE
  /// first when the database differs, else one SET; empty when alike (or
  /// when only the database differs and none is named here: a USE cannot
  /// go back to none).
  std::string prelude_from(const mysql_variables& from) const;
  /// The variables a connection has after prelude_from(from) ran there
  /// (the USE alone, or the SET): a replay may take two steps.
  mysql_variables after_prelude(const mysql_variables& from) const;

  friend bool operator==(const mysql_variables&, const mysql_variables&) = default;

private:
  std::string database_;
  /// Name (lowercase, without @@SESSION.), and "name = value".
  std::vector<std::pair<std::string, std::string>> entries_;
};

} // namespace qf::sql
