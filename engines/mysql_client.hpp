// What the blocking MySQL engine and the wire fast lane's non-blocking
// connections share: MariaDB Connector/C handles set up alike, column types,
// errors, and parameters spliced in as literals.
#pragma once

#include "engines/engine.hpp"
#include "engines/mysql_engine.hpp"
#include "protocols/sql/placeholders.hpp"

#include <mysql.h>

#include <string>

namespace qf::engines {

/// A handle with our session settings (utf8mb4, UTC, a 10 s connect
/// timeout), not connected yet; null when out of memory.
MYSQL* mysql_handle(bool nonblocking, unsigned connect_timeout_s);

/// Connects a fresh handle, blocking; null with the reason in `why`.
MYSQL* mysql_connect_blocking(const mysql_target& t, std::string& why);

/// KILL QUERY from a second connection: the server's way to stop a
/// statement, since its protocol has no out-of-band cancel. Blocking.
void mysql_kill_query(const mysql_target& t, unsigned long thread_id);

/// After a statement's first result, the further ones (a CALL's: its
/// procedure's other result sets, then its status) read and dropped, so
/// that the connection is ready for its next statement instead of
/// "Commands out of sync". False at an error among them (mysql_failure()).
bool mysql_skip_further_results(MYSQL* conn);

/// Our type for a result column.
sql_type mysql_column_type(const MYSQL_FIELD& f);

/// The handle's last error, classified.
engine_error mysql_failure(MYSQL* conn);

/// sql with each $n replaced by params[n - 1] as an escaped literal: NULL;
/// by its kind where the client said (a number bare, text quoted, bytes
/// quoted as _binary), else a plain integer as is and the rest quoted.
/// Throws engine_error 42P02 for a placeholder without a parameter.
std::string mysql_with_literals(MYSQL* conn, const std::string& sql, const parameters& params,
                                const std::vector<sql::literal_kind>& kinds = {});

} // namespace qf::engines
