// PostgreSQL server session: startup, simple query, local transaction and
// session statements, errors that skip the rest of a query.
#include "protocols/pgwire/session.hpp"

#include "protocols/pgwire/frontend.hpp"
#include "protocols/sql/statements.hpp"

#include <utility>

namespace qf::pgwire {

namespace {

error_fields error(std::string sqlstate, std::string message) {
  return {"ERROR", std::move(sqlstate), std::move(message), ""};
}

bool returns_rows(const std::string& keyword) {
  for (auto k : {"SELECT", "WITH", "VALUES", "TABLE", "SHOW", "EXPLAIN",
                 "PRAGMA", "DESCRIBE", "FROM", "SUMMARIZE"})
    if (keyword == k)
      return true;
  return false;
}

/// The value of "SET name = value" / "SET name TO value", unquoted.
std::pair<std::string, std::string> parse_set(std::string_view sql) {
  auto rest = sql.substr(sql.find_first_of(" \t\n") + 1);
  auto sep = rest.find_first_of("= \t");
  std::string name{rest.substr(0, sep)};
  auto value = sep == std::string_view::npos ? std::string_view{}
                                             : rest.substr(sep);
  while (!value.empty()
         && (value.front() == ' ' || value.front() == '=' || value.front() == '\t'))
    value.remove_prefix(1);
  if (value.size() >= 2 && (value.substr(0, 2) == "TO" || value.substr(0, 2) == "to"))
    value.remove_prefix(2);
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
    value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == ';'))
    value.remove_suffix(1);
  if (value.size() >= 2 && value.front() == '\'' && value.back() == '\'')
    value = value.substr(1, value.size() - 2);
  for (auto& c : name)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return {name, std::string{value}};
}

} // namespace

server_session::server_session(session_options opts) : opts_(std::move(opts)) {
  settings_ = {{"server_version", opts_.server_version},
               {"server_encoding", "UTF8"},
               {"client_encoding", "UTF8"},
               {"DateStyle", "ISO, MDY"},
               {"integer_datetimes", "on"},
               {"standard_conforming_strings", "on"},
               {"TimeZone", "UTC"},
               {"application_name", ""}};
}

void server_session::feed(std::string_view bytes) {
  in_.append(bytes);
  process();
}

std::optional<session_event> server_session::next_event() {
  if (events_.empty())
    return std::nullopt;
  auto ev = std::move(events_.front());
  events_.pop_front();
  return ev;
}

std::string server_session::take_output() {
  return std::exchange(out_, {});
}

/// ParameterStatus for settings changed by the query, then ReadyForQuery,
/// as PostgreSQL 14+ orders them.
void server_session::send_ready() {
  for (const auto& [name, value] : reports_)
    parameter_status(out_, name, value);
  reports_.clear();
  ready_for_query(out_, transaction_status());
}

char server_session::transaction_status() const {
  if (transaction_failed_)
    return 'E';
  return in_transaction_ ? 'T' : 'I';
}

void server_session::protocol_violation(const char* what) {
  error_response(out_, {"FATAL", "08P01", what, ""});
  state_ = state::closing;
}

void server_session::process() {
  while (state_ == state::startup || state_ == state::idle) {
    frame f;
    auto r = next_frame(in_, state_ == state::startup, opts_.max_message, f);
    if (r.status == decode_status::need_more)
      return;
    if (r.status == decode_status::error) {
      protocol_violation(r.reason);
      return;
    }
    // The frame views in_; copy what we keep before dropping the bytes.
    if (state_ == state::startup) {
      std::string body{f.body};
      in_.erase(0, r.consumed);
      handle_startup(body);
      continue;
    }
    auto msg = parse_message(f);
    in_.erase(0, r.consumed);
    if (!msg) {
      protocol_violation("malformed or unknown message");
      return;
    }
    if (std::holds_alternative<terminate>(*msg)) {
      state_ = state::closing;
      return;
    }
    if (std::holds_alternative<pgwire::sync>(*msg)) {
      skip_to_sync_ = false;
      send_ready();
      continue;
    }
    if (skip_to_sync_ || std::holds_alternative<flush>(*msg))
      continue;
    if (auto* q = std::get_if<query>(&*msg)) {
      handle_query(std::move(q->sql));
      continue;
    }
    if (std::holds_alternative<password>(*msg)) {
      protocol_violation("unexpected password message");
      return;
    }
    // Parse, Bind, Describe, Execute, Close: the extended protocol.
    error_response(out_, error("0A000", "the extended query protocol is not "
                                        "supported yet; use simple queries"));
    skip_to_sync_ = true;
  }
}

void server_session::handle_startup(std::string_view body) {
  auto packet = parse_startup(body);
  if (!packet) {
    protocol_violation("malformed startup packet");
    return;
  }
  if (std::holds_alternative<ssl_request>(*packet)
      || std::holds_alternative<gssenc_request>(*packet)) {
    out_ += 'N'; // no encryption here; the client may go on in plain text
    return;
  }
  if (auto* c = std::get_if<cancel_request>(&*packet)) {
    events_.push_back(cancel_event{c->process_id, c->secret_key});
    state_ = state::closing;
    return;
  }
  auto& m = std::get<startup_message>(*packet);
  if (m.protocol >> 16 != 3) {
    error_response(out_, {"FATAL", "0A000",
                          "unsupported frontend protocol "
                            + std::to_string(m.protocol >> 16) + "."
                            + std::to_string(m.protocol & 0xFFFF),
                          ""});
    state_ = state::closing;
    return;
  }
  if (!m.params.count("user")) {
    error_response(out_, {"FATAL", "28000",
                          "no PostgreSQL user name specified in startup "
                          "packet",
                          ""});
    state_ = state::closing;
    return;
  }
  startup_params_ = m.params;
  if (auto app = m.params.find("application_name"); app != m.params.end())
    settings_["application_name"] = app->second;
  state_ = state::awaiting_accept;
  events_.push_back(startup_event{m.params});
}

void server_session::accept() {
  if (state_ != state::awaiting_accept)
    return;
  authentication_ok(out_);
  for (auto name : {"server_version", "server_encoding", "client_encoding",
                    "DateStyle", "integer_datetimes",
                    "standard_conforming_strings", "TimeZone",
                    "application_name"})
    parameter_status(out_, name, settings_[name]);
  backend_key_data(out_, opts_.process_id, opts_.secret_key);
  ready_for_query(out_, 'I');
  state_ = state::idle;
  process();
}

void server_session::reject(const error_fields& e) {
  auto fatal = e;
  fatal.severity = "FATAL";
  error_response(out_, fatal);
  state_ = state::closing;
}

void server_session::handle_query(std::string sql) {
  auto statements = sql::split_statements(sql);
  if (statements.empty()) {
    empty_query_response(out_);
    send_ready();
    return;
  }
  pending_.assign(statements.begin(), statements.end());
  state_ = state::running;
  next_statement();
}

void server_session::next_statement() {
  while (!pending_.empty()) {
    current_ = std::move(pending_.front());
    pending_.pop_front();
    current_columns_.clear();
    rows_sent_ = 0;
    dml_count_.reset();
    if (transaction_failed_) {
      auto kw = sql::leading_keyword(current_);
      if (kw != "ROLLBACK" && kw != "COMMIT" && kw != "END"
          && kw != "ABORT") {
        fail(error("25P02", "current transaction is aborted, commands "
                            "ignored until end of transaction block"));
        return;
      }
    }
    if (run_locally(current_)) {
      if (state_ != state::running)
        return; // it failed, and fail() answered the query
      continue;
    }
    events_.push_back(run_event{current_});
    return; // the driver reports; complete() or fail() continues
  }
  state_ = state::idle;
  send_ready();
  process(); // pipelined queries waiting in the buffer
}

/// Statements about the session itself never reach an engine: connections
/// there are pooled, so SET would leak into other clients' queries.
bool server_session::run_locally(const std::string& sql) {
  auto kw = sql::leading_keyword(sql);
  if (kw == "BEGIN" || kw == "START") {
    in_transaction_ = true;
    command_complete(out_, kw == "BEGIN" ? "BEGIN" : "START TRANSACTION");
    return true;
  }
  if (kw == "COMMIT" || kw == "END" || kw == "ROLLBACK" || kw == "ABORT") {
    bool rollback = kw == "ROLLBACK" || kw == "ABORT" || transaction_failed_;
    in_transaction_ = transaction_failed_ = false;
    command_complete(out_, rollback ? "ROLLBACK" : "COMMIT");
    return true;
  }
  if (kw == "SET") {
    auto [name, value] = parse_set(sql);
    if (name == "local" || name == "session") // SET SESSION x = y
      std::tie(name, value) = parse_set(sql.substr(sql.find_first_of(" \t\n")
                                                   + 1));
    for (auto& [key, current] : settings_) {
      std::string lower = key;
      for (auto& c : lower)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (lower == name) {
        current = value;
        if (key == "application_name" || key == "client_encoding"
            || key == "DateStyle" || key == "TimeZone")
          reports_.emplace_back(key, value);
        name.clear();
        break;
      }
    }
    if (!name.empty())
      settings_[name] = value;
    command_complete(out_, "SET");
    return true;
  }
  if (kw == "SHOW") {
    auto name = sql::leading_keywords(sql, 2);
    name = name.size() > 5 ? name.substr(5) : "";
    for (auto& c : name)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::optional<std::string> value;
    for (const auto& [key, v] : settings_) {
      std::string lower = key;
      for (auto& c : lower)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (lower == name)
        value = v;
    }
    if (!value) {
      fail(error("42704", "unrecognized configuration parameter \"" + name
                            + "\""));
      return true;
    }
    std::vector<column> cols{{name, {type_id::varchar}}};
    row_batch one;
    one.width = 1;
    one.cells.emplace_back(*value);
    row_description(out_, cols, {});
    data_rows(out_, cols, {}, one, 0, 1);
    command_complete(out_, "SHOW");
    return true;
  }
  if (kw == "DISCARD" || kw == "RESET" || kw == "DEALLOCATE") {
    command_complete(out_, sql::leading_keywords(sql, 2));
    return true;
  }
  return false;
}

void server_session::columns(const std::vector<column>& cols) {
  if (state_ != state::running)
    return;
  auto kw = sql::leading_keyword(current_);
  // DuckDB answers DML and DDL with one "Count" column; PostgreSQL clients
  // expect a command tag and no rows.
  if (!returns_rows(kw) && cols.size() == 1 && cols[0].name == "Count") {
    dml_count_ = 0;
    return;
  }
  current_columns_ = cols;
  if (!cols.empty())
    row_description(out_, cols, {});
}

void server_session::rows(const row_batch& batch) {
  if (state_ != state::running)
    return;
  if (dml_count_) {
    if (batch.rows() > 0 && batch.at(0, 0))
      dml_count_ = std::stoll(*batch.at(0, 0));
    return;
  }
  if (current_columns_.empty())
    return;
  data_rows(out_, current_columns_, {}, batch, 0, batch.rows());
  rows_sent_ += static_cast<int64_t>(batch.rows());
}

void server_session::complete(int64_t affected_rows) {
  if (state_ != state::running)
    return;
  auto kw = sql::leading_keyword(current_);
  auto affected = dml_count_ ? *dml_count_ : std::max<int64_t>(affected_rows, 0);
  std::string tag;
  if (kw == "INSERT")
    tag = "INSERT 0 " + std::to_string(affected);
  else if (kw == "UPDATE" || kw == "DELETE")
    tag = kw + " " + std::to_string(affected);
  else if (returns_rows(kw) || !current_columns_.empty())
    tag = "SELECT " + std::to_string(rows_sent_);
  else
    tag = sql::leading_keywords(current_, 2);
  finish_statement(std::move(tag));
}

void server_session::finish_statement(std::string tag) {
  command_complete(out_, tag);
  next_statement();
}

void server_session::fail(const error_fields& e) {
  if (state_ != state::running)
    return;
  error_response(out_, e);
  pending_.clear(); // an error ends the whole simple query
  if (in_transaction_)
    transaction_failed_ = true;
  state_ = state::idle;
  send_ready();
  process();
}

} // namespace qf::pgwire
