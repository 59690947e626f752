// PostgreSQL server session: startup, simple query, local transaction and
// session statements, errors that skip the rest of a query.
#include "protocols/pgwire/session.hpp"

#include "protocols/pgwire/frontend.hpp"
#include "protocols/pgwire/relay.hpp"
#include "protocols/sql/statements.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <utility>

namespace qf::pgwire {

namespace {

error_fields error(std::string sqlstate, std::string message) {
  return {"ERROR", std::move(sqlstate), std::move(message), ""};
}

/// The value of "SET name = value" / "SET name TO value", unquoted.
std::pair<std::string, std::string> parse_set(std::string_view sql) {
  // Past the keyword, which may follow whitespace: a statement after the
  // first of a Query starts with what followed the semicolon.
  auto rest = sql::after_leading_keyword(sql);
  auto sep = rest.find_first_of("= \t");
  std::string name{rest.substr(0, sep)};
  auto value = sep == std::string_view::npos ? std::string_view{}
                                             : rest.substr(sep);
  while (!value.empty()
         && (value.front() == ' ' || value.front() == '=' || value.front() == '\t'))
    value.remove_prefix(1);
  // SET x TO y: the word TO, not the start of a value like "tomato".
  if (value.size() > 2 && std::tolower(static_cast<unsigned char>(value[0])) == 't'
      && std::tolower(static_cast<unsigned char>(value[1])) == 'o'
      && (value[2] == ' ' || value[2] == '\t'))
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

/// Settings beyond the reported ones that one connection may SET: the
/// gateway keeps them (they never reach a pooled server connection).
constexpr size_t max_other_settings = 1000;

/// The settings PostgreSQL reports at startup, in its order, and their
/// defaults here (server_version and application_name come from the
/// options and the startup packet).
constexpr std::array<std::string_view, 8> reported_names{
  "server_version", "server_encoding", "client_encoding", "DateStyle",
  "integer_datetimes", "standard_conforming_strings", "TimeZone", "application_name"};
constexpr std::array<std::string_view, 8> reported_defaults{
  "", "UTF8", "UTF8", "ISO, MDY", "on", "on", "UTC", ""};

/// Those a driver tracks: reported again when SET or RESET.
bool reported_when_changed(std::string_view name) {
  return name == "application_name" || name == "client_encoding" || name == "DateStyle"
         || name == "TimeZone";
}

/// The word after the statement's keyword: lowercased, or as written
/// between double quotes. "all" of "RESET ALL".
std::string first_argument(std::string_view sql) {
  auto rest = sql::after_leading_keyword(sql);
  if (!rest.empty() && rest.front() == '"') {
    auto end = rest.find('"', 1);
    return std::string{rest.substr(1, end == std::string_view::npos ? end : end - 1)};
  }
  std::string word{rest.substr(0, std::min(rest.size(), rest.find_first_of(" \t\r\n;")))};
  for (auto& c : word)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return word;
}

/// SET, SHOW or RESET of application_name: the client's name for itself
/// is the gateway's to keep (history records it), and the server's
/// connection keeps its own; no connection is held for it.
bool names_application(std::string_view sql) {
  auto name = first_argument(sql);
  if (name == "session")
    name = first_argument(sql::after_leading_keyword(sql));
  return name.substr(0, name.find('=')) == "application_name";
}

/// What DEALLOCATE [PREPARE] name | ALL names: "all", or the name.
std::string deallocated(std::string_view sql) {
  auto name = first_argument(sql);
  if (name == "prepare")
    name = first_argument(sql::after_leading_keyword(sql));
  return name;
}

bool equal_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size()
         && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
              return std::tolower(static_cast<unsigned char>(x))
                     == std::tolower(static_cast<unsigned char>(y));
            });
}

} // namespace

// The reported settings' values in an array, not a map: a client that
// connects per transaction paid for eight map nodes and their keys.
server_session::server_session(session_options opts) : opts_(std::move(opts)) {
  for (size_t i = 0; i < reported_names.size(); ++i)
    reported_values_[i] = default_setting(i);
}

std::string server_session::default_setting(size_t i) const {
  if (reported_names[i] == "server_version")
    return opts_.server_version;
  if (reported_names[i] == "application_name") {
    auto app = startup_params_.find("application_name");
    return app == startup_params_.end() ? std::string{} : app->second;
  }
  return std::string{reported_defaults[i]};
}

void server_session::reset_setting(std::string_view name) {
  bool all = name == "all";
  for (size_t i = 0; i < reported_names.size(); ++i) {
    if (!all && !equal_ignoring_case(reported_names[i], name))
      continue;
    auto value = default_setting(i);
    if (value != reported_values_[i] && reported_when_changed(reported_names[i]))
      reports_.emplace_back(reported_names[i], value);
    reported_values_[i] = std::move(value);
  }
  std::erase_if(other_settings_,
                [&](const auto& setting) { return all || equal_ignoring_case(setting.first, name); });
}

std::string* server_session::find_setting(std::string_view name, std::string_view& canonical) {
  for (size_t i = 0; i < reported_names.size(); ++i)
    if (equal_ignoring_case(reported_names[i], name)) {
      canonical = reported_names[i];
      return &reported_values_[i];
    }
  for (auto& [key, value] : other_settings_)
    if (equal_ignoring_case(key, name)) {
      canonical = key;
      return &value;
    }
  return nullptr;
}

void server_session::feed(std::string_view bytes) {
  in_.append(bytes);
  process();
}

/// ParameterStatus for settings changed by the query, then ReadyForQuery,
/// as PostgreSQL 14+ orders them.
void server_session::send_ready() {
  for (const auto& [name, value] : reports_)
    parameter_status(out_, name, value);
  reports_.clear();
  ready_for_query(out_, transaction_status());
  output_due_ = true;
}

char server_session::transaction_status() const {
  switch (transaction_) {
    case transaction::open:
      return 'T';
    case transaction::failed:
      return 'E';
    default:
      return 'I';
  }
}

void server_session::set_current(std::string_view sql) {
  current_.assign(sql);
  current_keyword_ = sql::leading_keyword(current_);
}

transaction_step server_session::current_step_of() const {
  return sql::transaction_step_of(current_, current_keyword_, transaction_ != transaction::idle);
}

/// Moves the block's state along once a statement has ended.
void server_session::after_statement(bool ok) {
  switch (current_step_) {
    case transaction_step::begin:
      if (ok)
        transaction_ = transaction::open;
      break;
    case transaction_step::inside:
      if (!ok)
        transaction_ = transaction::failed; // as the backend is now
      else if (current_keyword_ == "ROLLBACK") // to a savepoint: usable again
        transaction_ = transaction::open;
      break;
    case transaction_step::end:
      transaction_ = transaction::idle; // committed or rolled back
      implicit_open_ = false;           // also a script's, by its COMMIT
      drop_parked();
      break;
    case transaction_step::none:
      break;
  }
  current_step_ = transaction_step::none;
}

void server_session::protocol_violation(const char* what) {
  error_response(out_, {"FATAL", "08P01", what, ""});
  state_ = state::closing;
}

void server_session::process() {
  if (state_ == state::awaiting_password) {
    frame f;
    auto r = next_frame(in_, false, max_startup_length, f);
    if (r.status == decode_status::need_more)
      return;
    auto msg = r.status == decode_status::ok ? parse_message(f) : std::nullopt;
    in_.erase(0, r.consumed);
    auto* pw = msg ? std::get_if<password>(&*msg) : nullptr;
    if (!pw) {
      protocol_violation("expected a password message");
      return;
    }
    events_.push_back(password_event{std::move(pw->value)});
    state_ = state::awaiting_accept; // the driver checks it
    return;
  }
  if (copy_in_ == copy_in::open)
    return take_copy_data();
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
    if (f.tag == 'd' || f.tag == 'c' || f.tag == 'f') {
      // The rest of a copy the server ended early (an error): ignored, as
      // PostgreSQL does while the client is still sending.
      in_.erase(0, r.consumed);
      continue;
    }
    if (f.tag == 'F') { // a well-formed message we do not serve: the client hears, and goes on
      in_.erase(0, r.consumed);
      if (skip_to_sync_)
        continue; // ignored up to the Sync, as PostgreSQL ignores it
      extended_error(error("0A000", "the fast-path function call interface is not supported "
                                    "through QueryFlux: call the function in SQL "
                                    "(SELECT lo_open(...), say)"));
      skip_to_sync_ = false; // a FunctionCall is answered with its own ReadyForQuery
      send_ready();
      continue;
    }
    auto msg = parse_message(f);
    if (auto batch = msg ? in_a_batch(*msg, r.consumed) : batch_answer::no; batch != batch_answer::no) {
      // It stays in the input: it runs once the block is open, or once
      // what follows it tells.
      if (batch == batch_answer::yes) {
        state_ = state::running;
        run_hidden(hidden::begin);
      }
      return;
    }
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
      // The implicit transaction of a Sync ends here and takes its
      // portals along; the unnamed one goes in any case.
      if (suspended_ && (transaction_ == transaction::idle || suspended_->portal.empty()))
        close_suspended();
      forget(portals_, "");
      if (implicit_open_) { // the batch's implicit transaction ends here
        state_ = state::running;
        return run_hidden(transaction_ == transaction::failed ? hidden::rollback : hidden::commit);
      }
      send_ready();
      continue;
    }
    if (std::holds_alternative<flush>(*msg)) {
      output_due_ = !out_.empty();
      continue;
    }
    if (skip_to_sync_)
      continue;
    if (auto* q = std::get_if<query>(&*msg)) {
      handle_query(std::move(q->sql));
      continue;
    }
    if (std::holds_alternative<password>(*msg)) {
      protocol_violation("unexpected password message");
      return;
    }
    handle_extended(*msg);
  }
}

/// Whether the run this message starts (an Execute, or the Describe of a
/// portal with its Execute) has more of the client's messages after it
/// before the Sync: a batch, which PostgreSQL runs in one implicit
/// transaction up to that Sync (pgjdbc's executeBatch). A statement
/// followed by its Sync (or a Flush) needs no block of ours. Not known
/// yet while the next message has not arrived; it will, as a client
/// reads no answer before its Flush or Sync.
server_session::batch_answer server_session::in_a_batch(const message& msg, size_t consumed) const {
  const std::string* portal_name = nullptr;
  if (auto* e = std::get_if<execute>(&msg))
    portal_name = &e->portal;
  else if (auto* d = std::get_if<describe>(&msg); d && d->kind == 'P')
    portal_name = &d->name;
  if (!portal_name || skip_to_sync_ || transaction_ != transaction::idle || implicit_open_
      || !opts_.scripts_in_one_transaction)
    return batch_answer::no;
  auto bound = portals_.find(*portal_name);
  if (bound == portals_.end())
    return batch_answer::no;
  // A BEGIN opens the client's own block (pgjdbc sends BEGIN READ ONLY in
  // one batch with the first query): the server gets it as it is.
  const auto& sql = bound->second.sql;
  if (sql::transaction_step_of(sql, sql::leading_keyword(sql), false) != transaction_step::none)
    return batch_answer::no;
  std::string_view rest = std::string_view{in_}.substr(consumed);
  frame next;
  auto r = next_frame(rest, false, opts_.max_message, next);
  if (r.status == decode_status::ok && std::holds_alternative<describe>(msg) && next.tag == 'E') {
    rest.remove_prefix(r.consumed);
    r = next_frame(rest, false, opts_.max_message, next);
  }
  if (r.status == decode_status::error)
    return batch_answer::no; // the violation is reported when it is read
  if (r.status == decode_status::need_more)
    return batch_answer::not_yet;
  if (next.tag == 'S' || next.tag == 'H')
    return batch_answer::no;
  return opts_.scripts_in_one_transaction(bound->second.sql) ? batch_answer::yes
                                                             : batch_answer::no;
}

void server_session::extended_error(const error_fields& e) {
  error_response(out_, e);
  skip_to_sync_ = true; // PostgreSQL ignores the batch up to Sync
  if (transaction_ == transaction::open) // and the error aborts the block it is in
    transaction_ = transaction::failed;
}

void server_session::handle_extended(message& msg) {
  if (auto* p = std::get_if<parse>(&msg)) {
    handle_parse(*p);
  } else if (auto* b = std::get_if<bind>(&msg)) {
    handle_bind(*b);
  } else if (auto* d = std::get_if<describe>(&msg)) {
    handle_describe(*d);
  } else if (auto* e = std::get_if<execute>(&msg)) {
    handle_execute(e->portal, false, e->max_rows);
  } else if (auto* c = std::get_if<pgwire::close>(&msg)) {
    if (c->kind == 'S') {
      forget(statements_, c->name);
    } else {
      if (suspended_ && suspended_->portal == c->name)
        close_suspended();
      forget(portals_, c->name);
    }
    close_complete(out_);
  }
}

void server_session::handle_parse(parse& p) {
  if (!p.statement.empty() && statements_.count(p.statement)) {
    extended_error(error("42P05", "prepared statement \"" + p.statement
                                    + "\" already exists"));
    return;
  }
  if (sql::split_statements(p.sql).size() > 1) {
    extended_error(error("42601", "cannot insert multiple commands into a "
                                  "prepared statement"));
    return;
  }
  prepared_statement s{std::move(p.sql), std::move(p.param_types)};
  auto old = statements_.find(p.statement); // the unnamed one is replaced
  if (!room_for(size_of(s), old == statements_.end() ? 0 : size_of(old->second),
                old == statements_.end() && !p.statement.empty())) {
    extended_error(too_much_kept());
    return;
  }
  keep(statements_, p.statement, std::move(s));
  parse_complete(out_);
}

size_t server_session::size_of(const prepared_statement& s) {
  return sizeof(s) + s.sql.size() + s.param_types.size() * sizeof(uint32_t);
}

size_t server_session::size_of(const portal& p) {
  size_t n = sizeof(p) + p.sql.size() + p.result_formats.size() * sizeof(int16_t);
  for (const auto& v : p.params)
    n += sizeof(v) + (v ? v->size() : 0);
  return n;
}

error_fields server_session::too_much_kept() const {
  return error("53400", "this connection keeps too many prepared statements and portals "
                        "(QueryFlux keeps at most " + std::to_string(opts_.max_kept_entries)
                          + " and " + std::to_string(opts_.max_kept_bytes >> 20)
                          + " MiB per connection): close some");
}

bool server_session::room_for(size_t bytes, size_t replaced_bytes, bool new_named) const {
  // The unnamed statement and portal replace themselves: not counted.
  auto entries = statements_.size() - statements_.count("") + portals_.size()
                 - portals_.count("") + (new_named ? 1 : 0);
  return entries <= opts_.max_kept_entries
         && kept_bytes_ - replaced_bytes + bytes <= opts_.max_kept_bytes;
}

template <class Kept>
void server_session::keep(std::map<std::string, Kept>& kept, const std::string& name, Kept value) {
  forget(kept, name);
  kept_bytes_ += size_of(value);
  kept.emplace(name, std::move(value));
}

template <class Kept>
void server_session::forget(std::map<std::string, Kept>& kept, const std::string& name) {
  if (auto it = kept.find(name); it != kept.end()) {
    kept_bytes_ -= size_of(it->second);
    kept.erase(it);
  }
}

void server_session::forget_all_statements() {
  for (const auto& [name, s] : statements_)
    kept_bytes_ -= size_of(s);
  statements_.clear();
}



void server_session::handle_bind(bind& b) {
  auto stmt = statements_.find(b.statement);
  if (stmt == statements_.end()) {
    extended_error(error("26000", "prepared statement \"" + b.statement
                                    + "\" does not exist"));
    return;
  }
  const auto& formats = b.param_formats;
  if (formats.size() > 1 && formats.size() != b.params.size()) {
    extended_error(error("08P01", "bind message has "
                                    + std::to_string(formats.size())
                                    + " parameter formats but "
                                    + std::to_string(b.params.size())
                                    + " parameters"));
    return;
  }
  portal p{stmt->second.sql, std::move(b.params), std::move(b.result_formats),
           !b.statement.empty(), stmt->second.param_types};
  for (size_t i = 0; i < p.params.size(); ++i) {
    auto format = formats.empty() ? 0 : formats.size() == 1 ? formats[0]
                                                            : formats[i];
    if (format == 0 || !p.params[i])
      continue;
    auto oid = i < stmt->second.param_types.size()
                 ? stmt->second.param_types[i]
                 : 0;
    auto text = binary_param_to_text(oid, *p.params[i]);
    if (!text) {
      extended_error(error("22P03", "cannot read binary parameter $"
                                      + std::to_string(i + 1) + " of type "
                                      + std::to_string(oid)));
      return;
    }
    p.params[i] = std::move(*text);
  }
  auto old = portals_.find(b.portal);
  if (!room_for(size_of(p), old == portals_.end() ? 0 : size_of(old->second),
                old == portals_.end() && !b.portal.empty())) {
    extended_error(too_much_kept());
    return;
  }
  if (suspended_ && suspended_->portal == b.portal)
    close_suspended(); // the portal is replaced
  keep(portals_, b.portal, std::move(p));
  bind_complete(out_);
}

void server_session::handle_describe(const describe& d) {
  if (d.kind == 'S') {
    auto stmt = statements_.find(d.name);
    if (stmt == statements_.end()) {
      extended_error(error("26000", "prepared statement \"" + d.name
                                      + "\" does not exist"));
      return;
    }
    // The server describes it where it can, as it would if the client
    // had sent it there. Elsewhere declared types are echoed and
    // undeclared ones announced as text, which every client may send.
    const auto& [sql, declared] = stmt->second;
    described_on_server_ = opts_.statements_described_on_server
                           && opts_.statements_described_on_server(sql);
    if (described_on_server_) {
      described_name_ = d.name;
      described_sql_ = sql;
      described_types_ = declared;
    }
    std::vector<uint32_t> types = declared;
    auto placeholders = sql::highest_placeholder(sql);
    types.resize(std::max(types.size(), placeholders));
    for (auto& t : types)
      if (t == 0)
        t = 25;
    describe_statement(sql, std::move(types), declared, placeholders);
    return;
  }
  if (!portals_.count(d.name)) {
    extended_error(error("34000", "portal \"" + d.name
                                    + "\" does not exist"));
    return;
  }
  // Columns come from running it: with the Execute that nearly always
  // follows, the two are answered by one run; when none follows in this
  // read, the run pauses after the RowDescription until one comes
  // (awaiting_execute_), so the statement runs once.
  handle_execute(d.name, true, 0);
}

/// The columns of a query are known only once it runs: a query is run
/// wrapped in LIMIT 0 with NULL parameters, which evaluates no row. Inside
/// a transaction block a failed probe would abort the block on the
/// backend, so there, and for commands, the answer is NoData.
void server_session::describe_statement(const std::string& sql,
                                        std::vector<uint32_t> param_types,
                                        std::vector<uint32_t> declared_types,
                                        size_t placeholders) {
  auto kw = sql::leading_keyword(sql);
  bool wrappable = kw == "SELECT" || kw == "WITH" || kw == "VALUES" || kw == "TABLE";
  bool probe = wrappable && transaction_ == transaction::idle;
  if (!probe && !described_on_server_) {
    parameter_description(out_, param_types);
    no_data(out_);
    return;
  }
  if (probe) {
    auto body = std::string_view{sql};
    while (!body.empty() && (body.back() == ';' || std::isspace(static_cast<unsigned char>(body.back()))))
      body.remove_suffix(1);
    // The newline ends a trailing -- comment before the closing parenthesis.
    set_current("SELECT * FROM (" + std::string{body} + "\n) AS qf_describe LIMIT 0");
  } else { // for a connection that cannot relay the server's description
    set_current("SELECT WHERE false");
    placeholders = 0;
    declared_types.clear();
  }
  current_columns_.clear();
  rows_sent_ = 0;
  dml_count_.reset();
  result_formats_.clear();
  row_limit_ = 0;
  extended_ = true;
  send_description_ = true;
  send_rows_ = false;
  describing_ = std::move(param_types);
  state_ = state::running;
  // The server's Parse of the statement in a block fails the block if it
  // fails, as the client's own would.
  current_step_ = described_on_server_ && transaction_ != transaction::idle
                    ? transaction_step::inside
                    : transaction_step::none;
  // The probe declares what the client declared: the server infers the rest.
  events_.push_back(run_event{current_, std::vector<std::optional<std::string>>(placeholders),
                              current_step_, std::move(declared_types)});
}

std::optional<int32_t> server_session::next_is_execute_of(
  const std::string& portal_name) {
  frame f;
  auto r = next_frame(in_, false, opts_.max_message, f);
  if (r.status != decode_status::ok || f.tag != 'E')
    return std::nullopt;
  auto msg = parse_message(f);
  auto* e = msg ? std::get_if<execute>(&*msg) : nullptr;
  if (!e || e->portal != portal_name)
    return std::nullopt;
  in_.erase(0, r.consumed);
  return e->max_rows;
}

void server_session::handle_execute(const std::string& portal_name,
                                    bool describe_first, int32_t max_rows) {
  auto p = portals_.find(portal_name);
  if (p == portals_.end()) {
    extended_error(error("34000", "portal \"" + portal_name
                                    + "\" does not exist"));
    return;
  }
  if (suspended_ && suspended_->portal == portal_name) {
    if (!describe_first)
      return resume(max_rows);
    // Its columns are known: described without touching the run, which
    // the Execute after it resumes.
    row_description(out_, current_columns_, p->second.result_formats);
    return;
  }
  if (suspended_ && park_suspended([this, portal_name, describe_first, max_rows] {
        handle_execute(portal_name, describe_first, max_rows);
      }))
    return; // this Execute is handled once that run is parked
  if (suspended_)
    abandon_suspended();
  if (p->second.lost)
    return extended_error(error("0A000", "portal \"" + portal_name + "\" was closed when another "
                                         "statement ran, and it had more rows than the gateway "
                                         "keeps: read it to its end first"));
  if (p->second.parked) {
    if (describe_first) // its columns are known; the Execute after it takes it back
      return row_description(out_, p->second.parked->columns, p->second.result_formats);
    unpark(p->second, portal_name);
    return resume(max_rows);
  }
  if (p->second.ran && !describe_first)
    return execute_finished(portal_name, p->second.sql);
  bool execute_too = !describe_first;
  if (describe_first) {
    auto limit = next_is_execute_of(portal_name);
    execute_too = limit.has_value();
    max_rows = limit.value_or(0);
  }
  row_limit_ = execute_too ? std::max(max_rows, 0) : 0;
  running_portal_ = portal_name;
  held_ = {};
  held_from_ = 0;
  set_current(p->second.sql);
  current_columns_.clear();
  rows_sent_ = 0;
  dml_count_.reset();
  result_formats_ = p->second.result_formats;
  named_statement_ = p->second.named_statement;
  if (sql::split_statements(current_).empty()) {
    if (describe_first)
      no_data(out_);
    if (execute_too)
      empty_query_response(out_);
    return;
  }
  extended_ = true;
  send_description_ = describe_first;
  send_rows_ = true;
  awaiting_execute_ = !execute_too;
  state_ = state::running;
  switch (in_implicit_block(describe_first, execute_too)) {
    case implicit::runs:
      break;
    case implicit::answered:
      return finish_extended();
    case implicit::refused:
      return;
  }
  if (local_statement(current_keyword_)) {
    if (describe_first)
      no_data(out_);
    if (execute_too)
      run_locally(current_);
    if (state_ == state::running) // run_locally may have failed it
      finish_extended();
    return;
  }
  current_step_ = current_step_of();
  leaving_for_engine();
  events_.push_back(run_event{current_, p->second.params, current_step_, p->second.param_types});
}

/// An Execute of a portal whose run ended: PostgreSQL runs nothing again.
/// A query's portal (rows, or RETURNING's) has none left; a command's
/// cannot be run.
void server_session::execute_finished(const std::string& name, const std::string& sql) {
  auto kw = sql::leading_keyword(sql);
  if (!sql::returns_rows(kw) && !sql::contains_ignoring_case(sql, "returning"))
    return extended_error(error("55000", "portal \"" + name + "\" cannot be run"));
  command_complete(out_, kw == "INSERT"                                   ? "INSERT 0 0"
                         : kw == "UPDATE" || kw == "DELETE" || kw == "MERGE" ? kw + " 0"
                                                                            : "SELECT 0");
}

/// The portal that ran to its end (not suspended): an Execute of it again
/// runs nothing (execute_finished).
void server_session::portal_ran() {
  if (auto p = portals_.find(running_portal_); p != portals_.end())
    p->second.ran = true;
}

/// Execute of a suspended portal: rows held back go first, then the driver
/// reads on, until the new limit or the end.
void server_session::resume(int32_t max_rows) {
  row_limit_ = std::max(max_rows, 0);
  rows_sent_ = 0;
  extended_ = true;
  send_description_ = false;
  send_rows_ = true;
  state_ = state::running;
  auto run = std::move(*suspended_);
  suspended_.reset();
  auto kept = portals_.find(run.portal);
  result_formats_ = kept == portals_.end() ? std::vector<int16_t>{} : kept->second.result_formats;
  running_portal_ = run.portal;
  auto available = held_.rows() - held_from_;
  auto take = row_limit_ == 0 ? available
                              : std::min<size_t>(available, static_cast<size_t>(row_limit_));
  data_rows(out_, current_columns_, result_formats_, held_, held_from_, take);
  held_from_ += take;
  rows_sent_ += static_cast<int64_t>(take);
  bool more_held = held_from_ < held_.rows();
  if (!more_held) {
    held_ = {};
    held_from_ = 0;
  }
  if (!wants_rows() && (more_held || !run.finished)) {
    portal_suspended(out_);
    suspended_ = std::move(run);
    finish_extended();
    return;
  }
  if (run.error) {
    held_ = {};
    fail(*run.error);
    return;
  }
  if (run.finished) {
    held_ = {};
    complete(*run.finished);
    return;
  }
  events_.push_back(resume_event{});
}

void server_session::suspended_run_ended(int64_t affected_rows,
                                         std::optional<error_fields> error) {
  if (!suspended_)
    return;
  suspended_->finished = affected_rows;
  suspended_->error = std::move(error);
}

void server_session::suspend() {
  if (state_ != state::running || wants_rows())
    return;
  if (!std::exchange(awaiting_execute_, false)) // a Describe's run: no Execute to answer
    portal_suspended(out_);
  suspended_ = suspended_run{running_portal_, std::nullopt, std::nullopt};
  finish_extended();
}

void server_session::close_suspended() {
  suspended_.reset();
  held_ = {};
  held_from_ = 0;
  row_limit_ = 0;
  events_.push_back(close_run_event{});
}

/// One run at a time per session: another statement closes the suspended
/// one, whose portal PostgreSQL would have kept. An Execute of it later
/// fails rather than run it again from its first row (rows read twice,
/// writes made twice: pgjdbc's fetch size loops on it).
void server_session::abandon_suspended() {
  if (auto p = portals_.find(suspended_->portal); p != portals_.end())
    p->second.lost = true;
  close_suspended();
}

namespace {

/// What one connection may keep of portals read to their end to let
/// another statement run (park_suspended).
constexpr size_t max_parked_bytes = 64 * 1024 * 1024;

size_t bytes_of(const row_batch& rows) {
  size_t n = 0;
  for (const auto& c : rows.cells)
    n += sizeof(c) + (c ? c->size() : 0);
  return n;
}

} // namespace

/// Another statement comes while a portal's run is suspended inside a
/// block, where PostgreSQL keeps the portal: the run is read to its end
/// and its rows kept with the portal (parked), so that its next Execute
/// goes on where it stopped (pgjdbc reading with a fetch size and writing
/// between chunks). `then` handles what came, once the run is parked.
/// False where the portal would not survive (outside a block, the unnamed
/// one): it is abandoned.
bool server_session::park_suspended(std::function<void()> then) {
  if (transaction_ == transaction::idle || suspended_->portal.empty()
      || !portals_.count(suspended_->portal))
    return false;
  parking_ = suspended_->portal;
  after_parking_ = std::move(then);
  parking_bytes_ = bytes_of(held_);
  for (const auto& [name, p] : portals_)
    if (p.parked)
      parking_bytes_ += bytes_of(p.parked->rows);
  park_overflow_ = parking_bytes_ > max_parked_bytes;
  auto run = std::move(*suspended_);
  suspended_.reset();
  if (run.finished || run.error) { // its rows are all here already
    parked(run.finished, run.error);
    return true;
  }
  state_ = state::running;
  extended_ = true;
  send_description_ = false;
  send_rows_ = true;
  awaiting_execute_ = false;
  row_limit_ = 0;
  rows_sent_ = 0;
  events_.push_back(resume_event{});
  return true;
}

/// The parked run ended: its rows stay with its portal (or, past the
/// bound, the portal is lost), and what came meanwhile is handled.
void server_session::parked(std::optional<int64_t> finished, std::optional<error_fields> error) {
  auto name = std::move(*parking_);
  parking_.reset();
  if (auto p = portals_.find(name); p != portals_.end()) {
    if (park_overflow_) {
      p->second.lost = true;
    } else {
      p->second.parked = std::make_shared<parked_run>(
        parked_run{{name, finished, error}, std::move(held_), held_from_, current_columns_});
    }
  }
  if (error) // the server's block is aborted, as by any error in it
    transaction_ = transaction::failed;
  held_ = {};
  held_from_ = 0;
  park_overflow_ = false;
  extended_ = false;
  state_ = state::idle;
  std::exchange(after_parking_, nullptr)();
  process();
}

/// A parked portal's next Execute: its run is the suspended one again.
void server_session::unpark(portal& p, const std::string& name) {
  auto run = std::move(p.parked);
  suspended_ = std::move(run->run);
  held_ = std::move(run->rows);
  held_from_ = run->from;
  set_current(p.sql);
  current_columns_ = std::move(run->columns);
  running_portal_ = name;
  dml_count_.reset();
}

/// The block ended: PostgreSQL drops its portals, and their kept rows go.
void server_session::drop_parked() {
  for (auto& [name, p] : portals_)
    p.parked.reset();
}

void server_session::finish_extended() {
  extended_ = false;
  awaiting_execute_ = false;
  send_description_ = send_rows_ = true;
  result_formats_.clear();
  state_ = state::idle;
  process();
}

void server_session::handle_startup(std::string_view body) {
  auto packet = parse_startup(body);
  if (!packet) {
    protocol_violation("malformed startup packet");
    return;
  }
  if (std::holds_alternative<ssl_request>(*packet) && opts_.tls_available
      && !tls_) {
    if (!in_.empty()) {
      // Bytes sent in the clear after asking for TLS could be injected.
      protocol_violation("received unencrypted data after SSL request");
      return;
    }
    out_ += 'S';
    state_ = state::tls_handshake; // nothing more until the handshake
    events_.push_back(tls_event{});
    return;
  }
  if (std::holds_alternative<ssl_request>(*packet)
      || std::holds_alternative<gssenc_request>(*packet)) {
    out_ += 'N'; // no such encryption here: the client goes on in plain text
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
  startup_params_ = std::move(m.params);
  if (auto app = startup_params_.find("application_name"); app != startup_params_.end())
    reported_values_.back() = app->second; // application_name
  state_ = state::awaiting_accept;
  events_.push_back(startup_event{});
}

void server_session::tls_started() {
  if (state_ != state::tls_handshake)
    return;
  tls_ = true;
  state_ = state::startup;
  process();
}

void server_session::request_password() {
  if (state_ != state::awaiting_accept)
    return;
  authentication_cleartext(out_);
  state_ = state::awaiting_password;
  process();
}

void server_session::accept() {
  if (state_ != state::awaiting_accept)
    return;
  out_.reserve(out_.size() + 512); // the greeting below, in one allocation
  authentication_ok(out_);
  for (size_t i = 0; i < reported_names.size(); ++i)
    parameter_status(out_, reported_names[i], reported_values_[i]);
  backend_key_data(out_, opts_.process_id, opts_.secret_key);
  ready_for_query(out_, 'I');
  state_ = state::idle;
  process();
}

void server_session::notice(const error_fields& e) {
  if (hidden_ == hidden::none) // ours are nobody's business
    notice_response(out_, e);
}

void server_session::reject(const error_fields& e) {
  auto fatal = e;
  fatal.severity = "FATAL";
  error_response(out_, fatal);
  state_ = state::closing;
}

void server_session::handle_query(std::string sql) {
  if (suspended_ && park_suspended([this, sql] { handle_query(sql); }))
    return; // this Query runs once that run is parked
  if (suspended_)
    abandon_suspended();
  // Nothing of an Execute's stays: the limit of a portal closed early
  // made the next query's run pause (and lose its relay) at that limit.
  row_limit_ = 0;
  awaiting_execute_ = false;
  query_text_ = std::move(sql);
  sql::split_statements(query_text_, pending_);
  next_pending_ = 0;
  if (pending_.empty()) {
    empty_query_response(out_);
    send_ready();
    return;
  }
  // A script that SETs for the session keeps running statement by
  // statement: a SET inside a block could not be kept for the client's
  // next statements. SET LOCAL is the block's, as on PostgreSQL.
  script_in_one_transaction_
    = pending_.size() > 1 && opts_.scripts_in_one_transaction
      && std::none_of(pending_.begin(), pending_.end(), sql::changes_session_setting)
      && opts_.scripts_in_one_transaction(query_text_);
  state_ = state::running;
  next_statement();
}

void server_session::next_statement() {
  while (next_pending_ < pending_.size()) {
    set_current(pending_[next_pending_++]);
    current_columns_.clear();
    rows_sent_ = 0;
    dml_count_.reset();
    bool more_follow = next_pending_ < pending_.size();
    auto in_block = in_implicit_block(false, true);
    if (in_block == implicit::refused)
      return;
    if (in_block == implicit::answered)
      continue;
    if (script_in_one_transaction_ && transaction_ == transaction::idle && more_follow
        && !local_statement(current_keyword_)
        && sql::transaction_step_of(current_, current_keyword_, false) == transaction_step::none) {
      --next_pending_; // it runs once the block is open
      return run_hidden(hidden::begin);
    }
    if (local_statement(current_keyword_)) {
      run_locally(current_);
      if (state_ != state::running)
        return; // it failed, and fail() answered the query
      continue;
    }
    current_step_ = current_step_of();
    leaving_for_engine();
    events_.push_back(run_event{current_, {}, current_step_});
    return; // the driver reports; complete() or fail() continues
  }
  if (implicit_open_)
    return run_hidden(hidden::commit);
  end_query();
}

/// The current statement in a script's or batch's implicit transaction,
/// as PostgreSQL takes it there: a BEGIN makes the block the client's (what
/// ran before is in it, and no COMMIT of ours ends it) and is answered
/// here; a savepoint is refused (the client opened no block to keep it
/// in); a COMMIT or ROLLBACK, which ends the implicit block, warns first.
/// Outside one, or for the rest: it runs.
server_session::implicit server_session::in_implicit_block(bool describe_first, bool execute_too) {
  if (!implicit_open_)
    return implicit::runs;
  if (auto refused = outside_a_block_only(); !refused.empty()) {
    fail(error("25P01", refused + " can only be used in transaction blocks"));
    return implicit::refused;
  }
  if (sql::transaction_step_of(current_, current_keyword_, false) == transaction_step::begin) {
    implicit_open_ = false;
    if (describe_first)
      no_data(out_);
    if (execute_too)
      command_complete(out_, current_keyword_ == "BEGIN" ? "BEGIN" : "START TRANSACTION");
    return implicit::answered;
  }
  if (sql::transaction_step_of(current_, current_keyword_, true) == transaction_step::end)
    notice_response(out_, {"WARNING", "25P01", "there is no transaction in progress", ""});
  return implicit::runs;
}

/// What PostgreSQL refuses in a script's implicit transaction (the
/// client opened no block to keep a savepoint in), by its name; empty for
/// the rest.
std::string server_session::outside_a_block_only() const {
  if (current_keyword_ == "SAVEPOINT")
    return "SAVEPOINT";
  if (current_keyword_ == "RELEASE")
    return "RELEASE SAVEPOINT";
  if (current_keyword_ == "ROLLBACK" && sql::leading_keywords(current_, 2) == "ROLLBACK TO")
    return "ROLLBACK TO SAVEPOINT";
  return {};
}

int32_t server_session::statement_position() const {
  if (extended_ || next_pending_ == 0 || next_pending_ > pending_.size())
    return 0;
  auto start = static_cast<size_t>(pending_[next_pending_ - 1].data() - query_text_.data());
  int32_t chars = 0;
  for (size_t i = 0; i < start && i < query_text_.size(); ++i)
    if ((static_cast<unsigned char>(query_text_[i]) & 0xC0) != 0x80) // not a continuation byte
      ++chars;
  return chars;
}

void server_session::end_query() {
  pending_.clear();
  next_pending_ = 0;
  state_ = state::idle;
  send_ready();
  process(); // pipelined queries waiting in the buffer
}

void server_session::query_failed() {
  pending_.clear();
  next_pending_ = 0;
  if (implicit_open_)
    return run_hidden(hidden::rollback);
  end_query();
}

void server_session::run_hidden(hidden what) {
  hidden_ = what;
  set_current(what == hidden::begin ? "BEGIN" : what == hidden::commit ? "COMMIT" : "ROLLBACK");
  current_columns_.clear();
  current_step_ = what == hidden::begin ? transaction_step::begin : transaction_step::end;
  events_.push_back(run_event{current_, {}, current_step_});
}

void server_session::hidden_ended(const error_fields* error) {
  auto what = std::exchange(hidden_, hidden::none);
  after_statement(error == nullptr);
  implicit_open_ = what == hidden::begin && !error;
  bool script = next_pending_ < pending_.size(); // else an extended batch
  if (what == hidden::begin && !error && script)
    return next_statement();
  if (what == hidden::begin && !script) { // the batch's message waits in the input
    if (error)
      extended_error(*error);
    state_ = state::idle;
    return process();
  }
  if (error && what != hidden::rollback) // a deferred constraint, say: the script's error
    error_response(out_, *error);
  end_query();
}

/// Statements about the session itself reach an engine only where it has
/// such settings and the driver gives the client's to each connection its
/// statements run on (settings_on_server): elsewhere connections are
/// pooled, so SET would leak into other clients' queries.
bool server_session::local_statement(std::string_view kw) const {
  // Outside a block there is nothing to end: answered here, as PostgreSQL
  // does, with a warning.
  if (kw == "COMMIT" || kw == "END" || kw == "ROLLBACK" || kw == "ABORT")
    return transaction_ == transaction::idle
           && sql::transaction_effect_of(current_, kw) == sql::transaction_effect::ends;
  if ((kw == "SET" || kw == "SHOW" || kw == "RESET") && opts_.settings_on_server
      && !names_application(current_) && opts_.settings_on_server(current_))
    return false;
  // An SQL PREPARE's statement lives on the server (and its connection
  // stays the client's): DEALLOCATE of one that is not ours goes there.
  if (kw == "DEALLOCATE" && opts_.settings_on_server && opts_.settings_on_server(current_)) {
    auto name = deallocated(current_);
    if (name == "all" || !statements_.contains(name))
      return false;
  }
  for (auto k : {"SET", "SHOW", "DISCARD", "RESET", "DEALLOCATE", "LISTEN", "UNLISTEN"})
    if (kw == k)
      return true;
  return false;
}

void server_session::leaving_for_engine() {
  if (current_keyword_ == "DEALLOCATE" && deallocated(current_) == "all")
    forget_all_statements();
}

void server_session::run_locally(const std::string& sql) {
  auto kw = sql::leading_keyword(sql);
  if (kw == "COMMIT" || kw == "END" || kw == "ROLLBACK" || kw == "ABORT") {
    notice_response(out_, {"WARNING", "25P01",
                           "there is no transaction in progress", ""});
    command_complete(out_, kw == "ROLLBACK" || kw == "ABORT" ? "ROLLBACK"
                                                             : "COMMIT");
    return;
  }
  if (kw == "SET") {
    auto [name, value] = parse_set(sql);
    if (name == "local" || name == "session") // SET SESSION x = y
      std::tie(name, value) = parse_set(sql::after_leading_keyword(sql));
    std::string_view key;
    if (auto* current = find_setting(name, key)) {
      *current = value;
      if (reported_when_changed(key))
        reports_.emplace_back(key, value);
    } else if (other_settings_.size() >= max_other_settings) {
      fail(error("53400", "this connection has SET " + std::to_string(max_other_settings)
                            + " settings already: RESET some"));
      return;
    } else {
      other_settings_.emplace_back(name, value);
    }
    command_complete(out_, "SET");
    return;
  }
  if (kw == "LISTEN") {
    // A notification reaches the backend session that listens, and that
    // session serves whoever runs the next statement on it.
    fail(error("0A000", "LISTEN is not supported through QueryFlux: backend connections are "
                        "pooled between statements, so no connection stays yours to hear on"));
    return;
  }
  if (kw == "UNLISTEN") { // nothing listens
    command_complete(out_, "UNLISTEN");
    return;
  }
  if (kw == "SHOW") {
    auto name = sql::leading_keywords(sql, 2);
    name = name.size() > 5 ? name.substr(5) : "";
    for (auto& c : name)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string_view key;
    auto* value = find_setting(name, key);
    if (!value) {
      fail(error("42704", "unrecognized configuration parameter \"" + name
                            + "\""));
      return;
    }
    std::vector<column> cols{{name, {type_id::varchar}}};
    row_batch one;
    one.width = 1;
    one.cells.emplace_back(*value);
    row_description(out_, cols, {});
    data_rows(out_, cols, {}, one, 0, 1);
    command_complete(out_, "SHOW");
    return;
  }
  if (kw == "RESET") {
    reset_setting(first_argument(sql));
    command_complete(out_, "RESET");
    return;
  }
  if (kw == "DISCARD") { // ALL, PLANS, SEQUENCES, TEMP: only ALL is ours
    auto what = first_argument(sql);
    if (what == "all") {
      reset_setting("all");
      forget_all_statements();
      ++resets_;
    }
    command_complete(out_, sql::leading_keywords(sql, 2));
    return;
  }
  if (kw == "DEALLOCATE") {
    auto name = deallocated(sql);
    if (name == "all")
      forget_all_statements();
    else
      forget(statements_, name);
    command_complete(out_, name == "all" ? "DEALLOCATE ALL" : "DEALLOCATE");
  }
}

bool server_session::columns(const std::vector<column>& cols) {
  if (state_ != state::running)
    return false;
  if (hidden_ != hidden::none)
    return true;
  if (describing_) {
    parameter_description(out_, *describing_);
    if (cols.empty())
      no_data(out_);
    else
      row_description(out_, cols, {}); // formats are not known before Bind
    describing_.reset();
    described_on_server_ = false;
    return true;
  }
  const auto& kw = current_keyword_;
  // DuckDB answers DML and DDL with one "Count" column; PostgreSQL clients
  // expect a command tag and no rows.
  if (!sql::returns_rows(kw) && cols.size() == 1 && cols[0].name == "Count") {
    dml_count_ = 0;
    if (send_description_ && extended_)
      no_data(out_);
    return true;
  }
  for (size_t i = 0; i < cols.size(); ++i) {
    auto f = result_formats_.empty()       ? 0
             : result_formats_.size() == 1 ? result_formats_[0]
             : i < result_formats_.size()  ? result_formats_[i]
                                           : 0;
    if (f == 1 && !has_binary_format(cols[i].type)) {
      fail(error("0A000", "binary format is not supported for column \""
                            + cols[i].name + "\""));
      return false;
    }
  }
  current_columns_ = cols;
  if (send_description_) {
    if (!cols.empty())
      row_description(out_, cols, result_formats_);
    else if (extended_)
      no_data(out_); // the simple protocol sends nothing for no columns
  }
  return true;
}

void server_session::rows(const row_batch& batch) {
  if (state_ != state::running || hidden_ != hidden::none)
    return;
  if (parking_) { // kept for the portal's next Execute, up to the bound
    parking_bytes_ += bytes_of(batch);
    park_overflow_ = park_overflow_ || parking_bytes_ > max_parked_bytes;
    if (!park_overflow_) {
      held_.width = batch.width;
      held_.cells.insert(held_.cells.end(), batch.cells.begin(), batch.cells.end());
    }
    return;
  }
  if (dml_count_) {
    if (batch.rows() > 0 && batch.at(0, 0)) {
      const auto& v = *batch.at(0, 0);
      int64_t n = 0;
      std::from_chars(v.data(), v.data() + v.size(), n);
      dml_count_ = n;
    }
    return;
  }
  if (current_columns_.empty() || !send_rows_)
    return;
  size_t take = awaiting_execute_ ? 0 : batch.rows();
  if (row_limit_ > 0)
    take = std::min<size_t>(take, static_cast<size_t>(std::max<int64_t>(row_limit_ - rows_sent_, 0)));
  data_rows(out_, current_columns_, result_formats_, batch, 0, take);
  rows_sent_ += static_cast<int64_t>(take);
  if (take < batch.rows()) { // past the limit: kept for the next Execute
    held_.width = batch.width;
    held_.cells.insert(held_.cells.end(),
                       batch.cells.begin() + static_cast<std::ptrdiff_t>(take * batch.width),
                       batch.cells.end());
  }
}

void server_session::complete(int64_t affected_rows) {
  if (state_ != state::running)
    return;
  if (hidden_ != hidden::none)
    return hidden_ended(nullptr);
  if (parking_)
    return parked(affected_rows, std::nullopt);
  if (describing_) { // the probe ended without columns: describe none
    columns({});
    finish_extended();
    return;
  }
  if (std::exchange(awaiting_execute_, false)) {
    // A Describe's run ended before its Execute came: kept for it.
    suspended_ = suspended_run{running_portal_, affected_rows, std::nullopt};
    finish_extended();
    return;
  }
  if (extended_ && held_from_ < held_.rows()) {
    // The run ended, but rows past the limit still wait for an Execute.
    portal_suspended(out_);
    suspended_ = suspended_run{running_portal_, affected_rows, std::nullopt};
    finish_extended();
    return;
  }
  row_limit_ = 0;
  const auto& kw = current_keyword_;
  // RETURNING's rows are its count where the engine gave none.
  auto affected = dml_count_                                      ? *dml_count_
                  : affected_rows < 0 && !current_columns_.empty() ? rows_sent_
                                                                   : std::max<int64_t>(affected_rows, 0);
  std::string tag;
  if (kw == "INSERT")
    tag = "INSERT 0 " + std::to_string(affected);
  else if (kw == "UPDATE" || kw == "DELETE")
    tag = kw + " " + std::to_string(affected);
  else if (sql::returns_rows(kw) || !current_columns_.empty())
    tag = "SELECT " + std::to_string(rows_sent_);
  else if (kw == "BEGIN")
    tag = "BEGIN";
  else if (kw == "START")
    tag = "START TRANSACTION";
  else if (kw == "COMMIT" || kw == "END")
    tag = transaction_ == transaction::failed ? "ROLLBACK" : "COMMIT";
  else if (kw == "ROLLBACK" || kw == "ABORT")
    tag = "ROLLBACK";
  else if (kw == "SAVEPOINT" || kw == "RELEASE") // one word: a name follows
    tag = kw;
  else
    tag = sql::leading_keywords(current_, 2);
  after_statement(true);
  if (extended_) {
    if (send_rows_) {
      command_complete(out_, tag);
      portal_ran();
    }
    finish_extended();
    return;
  }
  finish_statement(std::move(tag));
}

bool server_session::copy_in_start() {
  if (state_ != state::running || extended_ || copy_in_ != copy_in::none)
    return false;
  copy_in_ = copy_in::open;
  output_due_ = true; // the CopyInResponse: the client waits for it
  take_copy_data();
  return true;
}

void server_session::take_copy_data() {
  size_t pos = 0;
  while (copy_in_ == copy_in::open) {
    frame f;
    auto r = next_frame(std::string_view{in_}.substr(pos), false, opts_.max_message, f);
    if (r.status == decode_status::need_more)
      break;
    if (r.status == decode_status::error) {
      protocol_violation(r.reason);
      break;
    }
    if (f.tag == 'd' || f.tag == 'c' || f.tag == 'f') {
      copy_messages_.append(in_, pos, r.consumed);
      if (f.tag != 'd')
        copy_in_ = copy_in::sent;
    } else if (f.tag != 'H' && f.tag != 'S') {
      // PostgreSQL fails the copy and drops the message.
      char why[64];
      std::snprintf(why, sizeof why, "unexpected message type 0x%02X during COPY from stdin",
                    static_cast<unsigned char>(f.tag));
      copy_fail_message(copy_messages_, why, false);
      copy_in_ = copy_in::sent;
    }
    pos += r.consumed;
  }
  in_.erase(0, pos);
}

void server_session::relay(std::string_view server_messages) {
  if (relays_a_statement_describe()) {
    // The client binds by the types the server told it: so do we, when
    // we read its binary parameters and when we parse it on a server.
    auto stmt = statements_.find(described_name_);
    auto types = parameter_types_of(server_messages);
    if (types && stmt != statements_.end() && stmt->second.sql == described_sql_) {
      kept_bytes_ -= size_of(stmt->second);
      stmt->second.param_types = std::move(*types);
      kept_bytes_ += size_of(stmt->second);
    }
  }
  out_.append(server_messages);
}

void server_session::relay_end(bool failed) {
  // The server's answer ends a copy, also one it ended early: the rest of
  // the client's data is ignored as it comes.
  copy_in_ = copy_in::none;
  copy_messages_.clear();
  if (state_ != state::running)
    return;
  if (relays_a_statement_describe()) {
    describing_.reset();
    described_on_server_ = false;
    after_statement(!failed);
    if (failed) // the server's ErrorResponse told the client
      skip_to_sync_ = true;
    finish_extended();
    return;
  }
  if (extended_) {
    after_statement(!failed);
    if (failed) // the relayed ErrorResponse told the client
      skip_to_sync_ = true;
    else
      portal_ran();
    finish_extended();
    return;
  }
  after_statement(!failed);
  if (!failed)
    return next_statement();
  query_failed(); // an error ends the whole simple query
}

void server_session::finish_statement(std::string tag) {
  command_complete(out_, tag);
  next_statement();
}

void server_session::fail(const error_fields& e) {
  if (state_ != state::running)
    return;
  if (hidden_ != hidden::none)
    return hidden_ended(&e);
  if (parking_) // the portal's next Execute tells it
    return parked(std::nullopt, e);
  if (describing_) {
    // The probe is ours, not the client's: a query it cannot wrap (a
    // parameter of unknown type, say) is described as before, NoData.
    parameter_description(out_, *describing_);
    no_data(out_);
    describing_.reset();
    described_on_server_ = false;
    finish_extended();
    return;
  }
  awaiting_execute_ = false;
  row_limit_ = 0;
  held_ = {};
  held_from_ = 0;
  after_statement(false);
  if (extended_) {
    extended_error(e);
    finish_extended();
    return;
  }
  error_response(out_, e);
  query_failed(); // an error ends the whole simple query
}

} // namespace qf::pgwire
