// What the blocking and the non-blocking PostgreSQL connections share:
// libpq's results turned into our columns, cells and errors, and the
// parameters every connection opens with.
#pragma once

#include "engines/engine.hpp"

#include <libpq-fe.h>

#include <string>

namespace qf::engines {

/// libpq's own error text, trimmed of its trailing newline.
std::string pq_message(const char* text);

/// A failed result as an engine_error carrying the server's SQLSTATE.
engine_error result_error(PGresult* res);

/// A server error from its SQLSTATE and primary message, its kind read
/// from the code (cancelled, syntax, internal or user).
engine_error server_error(const std::string& sqlstate, const std::string& message);

/// The columns of a result (PostgreSQL's type OIDs mapped onto ours).
std::vector<column> columns_of(PGresult* res);

/// Appends row `row` of res to out, cells in canonical text form.
void append_row(row_batch& out, const std::vector<column>& cols, PGresult* res,
                int row);

/// Keeps the server's notices (RAISE NOTICE, "relation exists, skipping")
/// out of the gateway's stderr, where libpq prints them by default: they
/// are the client's, and a client could write any line into our log. For
/// a connection being opened; an open one installs a receiver of its own
/// that hands them to the statement's client.
void keep_notices_from_stderr(PGconn* conn);

/// What a notice receiver is given, as our notice.
notice notice_of(const PGresult* res);

/// PQconnect*Params keywords: the cluster's conninfo (a URL or key=value
/// string), our application_name, a connect timeout, and for the actor
/// path sessions in UTC (timestamptz arrives canonical, whatever frontend
/// reads it). The wire fast lane's connections keep the server's own
/// TimeZone (and the endpoint's options): its clients read the server's
/// text as they would directly.
struct pq_connect_params {
  enum class zone { utc, servers };

  explicit pq_connect_params(const std::string& conninfo, zone z = zone::utc)
    : values{conninfo.c_str(), "queryflux", timeout.c_str(),
             z == zone::utc ? "-c TimeZone=UTC" : nullptr, nullptr} {
    // nop
  }

  std::string timeout = std::to_string(connect_timeout.count()); // declared before values
  const char* keys[5] = {"dbname", "application_name", "connect_timeout", "options", nullptr};
  const char* values[5]; // null-terminated where "options" is not given
};

} // namespace qf::engines
