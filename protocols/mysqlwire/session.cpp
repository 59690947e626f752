// MySQL server session: greeting, login (with a switch to
// mysql_native_password when the client starts with another plugin), and
// the command phase with the questions every client asks on connect
// answered here.
#include "protocols/mysqlwire/session.hpp"

#include "protocols/sql/placeholders.hpp"
#include "protocols/sql/session_settings.hpp"
#include "protocols/sql/statements.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <utility>

namespace qf::mysqlwire {

namespace {

constexpr uint16_t status_in_trans = 1;
constexpr uint16_t status_autocommit = 2;
constexpr uint16_t status_more_results_exist = 8;

constexpr uint32_t offered_capabilities
  = client_long_password | client_found_rows | client_long_flag
    | client_connect_with_db | client_protocol_41 | client_transactions
    | client_secure_connection | client_multi_statements | client_multi_results | client_plugin_auth
    | client_connect_attrs | client_plugin_auth_lenenc
    // As MariaDB: OK packets' info then reads length-encoded by every
    // client (we report no session state changes).
    | client_session_track;

constexpr std::string_view native_plugin = "mysql_native_password";

/// A connection may hold this many prepared statements, as MySQL's
/// max_prepared_stmt_count bounds a whole server.
constexpr size_t max_prepared_per_connection = 1024;

std::string lower(std::string_view s) {
  std::string out{s};
  for (auto& c : out)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty()
         && (std::isspace(static_cast<unsigned char>(s.front()))
             || s.front() == ';'))
    s.remove_prefix(1);
  while (!s.empty()
         && (std::isspace(static_cast<unsigned char>(s.back()))
             || s.back() == ';'))
    s.remove_suffix(1);
  return s;
}

/// What a client may ask about the server through @@variables.
std::string variable_value(std::string_view name, const std::string& server_version,
                           bool autocommit) {
  auto n = lower(name);
  for (auto prefix : {"session.", "global.", "local."})
    if (n.rfind(prefix, 0) == 0)
      n.erase(0, std::string_view{prefix}.size());
  if (n == "version_comment")
    return "QueryFlux";
  if (n == "version")
    return server_version;
  if (n == "max_allowed_packet")
    return "16777216";
  if (n == "autocommit")
    return autocommit ? "1" : "0";
  if (n == "auto_increment_increment")
    return "1";
  if (n.rfind("character_set_", 0) == 0)
    return "utf8mb4";
  if (n.rfind("collation_", 0) == 0)
    return "utf8mb4_general_ci";
  if (n == "time_zone")
    return "+00:00";
  if (n == "system_time_zone")
    return "UTC";
  if (n == "tx_isolation" || n == "transaction_isolation")
    return "REPEATABLE-READ";
  if (n == "lower_case_table_names" || n == "sql_mode")
    return n == "sql_mode" ? "" : "0";
  if (n == "wait_timeout" || n == "interactive_timeout")
    return "28800";
  if (n == "net_write_timeout")
    return "60";
  return "";
}

/// The value SET gives autocommit for this session, if it sets it:
/// "autocommit = 0", "@@session.autocommit=OFF", "SESSION autocommit=1"...
/// A value as written, without its comments (`0 /* off */`) and spaces.
std::string value_text(std::string_view raw) {
  std::string out;
  char quote = 0;
  for (size_t i = 0; i < raw.size(); ++i) {
    char c = raw[i];
    if (quote) {
      out += c;
      if (c == '\\' && quote != '`' && i + 1 < raw.size())
        out += raw[++i];
      else if (c == quote)
        quote = 0;
    } else if (c == '\'' || c == '"' || c == '`') {
      quote = c;
      out += c;
    } else if (raw.substr(i, 2) == "/*") {
      auto end = raw.find("*/", i + 2);
      if (end == std::string_view::npos)
        break;
      i = end + 1;
      out += ' '; // KILL QUERY/**/5 is KILL QUERY 5
    } else if (c == '#' || raw.substr(i, 3) == "-- ") {
      break;
    } else {
      out += c;
    }
  }
  return std::string{trim(out)};
}

/// An item of a SELECT's list: a system variable (`@@x`, `@@session.x`:
/// variable "x" or "session.x"), or not (variable empty), and the name
/// its column gets (its alias, with or without AS, else its text).
struct select_item {
  std::string_view text;
  std::string_view variable;
  std::string_view name;
};

std::vector<select_item> select_items(std::string_view list) {
  std::vector<select_item> items;
  size_t start = 0;
  int depth = 0;
  char quote = 0;
  for (size_t i = 0; i <= list.size(); ++i) {
    char c = i < list.size() ? list[i] : ',';
    if (quote) {
      quote = c == quote ? 0 : quote;
      continue;
    }
    if (c == '\'' || c == '"' || c == '`')
      quote = c;
    else if (c == '(')
      ++depth;
    else if (c == ')')
      --depth;
    if (c != ',' || depth > 0)
      continue;
    select_item item;
    item.text = trim(list.substr(start, i - start));
    item.name = item.text;
    start = i + 1;
    auto t = item.text;
    if (t.starts_with("@@")) {
      size_t end = 2;
      while (end < t.size() && (std::isalnum(static_cast<unsigned char>(t[end])) || t[end] == '_' || t[end] == '.'))
        ++end;
      auto rest = trim(t.substr(end));
      if (lower(rest).starts_with("as ") || lower(rest).starts_with("as`"))
        rest = trim(rest.substr(2));
      bool plain = rest.find_first_of(" \t()+-*/=<>!|&,") == std::string_view::npos;
      if (plain) {
        item.variable = t.substr(2, end - 2);
        item.name = rest.empty() ? t.substr(0, end) : rest;
        if (item.name.size() >= 2 && (item.name.front() == '`' || item.name.front() == '"'
                                      || item.name.front() == '\'')
            && item.name.back() == item.name.front())
          item.name = item.name.substr(1, item.name.size() - 2);
      }
    }
    items.push_back(item);
  }
  return items;
}

bool is_autocommit(std::string_view variable) {
  auto v = lower(variable);
  return v == "autocommit" || v == "session.autocommit" || v == "local.autocommit";
}

/// `text` with each @@autocommit (any scope, any case) the session's value.
std::string with_autocommit(std::string_view text, bool autocommit) {
  std::string out;
  auto low = lower(text);
  size_t i = 0;
  while (i < text.size()) {
    size_t length = 0;
    for (std::string_view form : {"@@session.autocommit", "@@local.autocommit", "@@autocommit"})
      if (std::string_view{low}.substr(i, form.size()) == form) {
        length = form.size();
        break;
      }
    if (length == 0) {
      out += text[i++];
      continue;
    }
    out += autocommit ? '1' : '0';
    i += length;
  }
  return out;
}

std::optional<bool> autocommit_assignment(std::string_view set_body) {
  std::optional<bool> value;
  for (auto item : sql::mysql_assignments(set_body)) {
    auto [name, raw] = sql::mysql_assignment(item);
    if (name != "autocommit")
      continue;
    auto v = lower(value_text(raw));
    if (v.size() >= 2 && (v.front() == '\'' || v.front() == '"') && v.back() == v.front())
      v = std::string{trim(std::string_view{v}.substr(1, v.size() - 2))}; // 'OFF'
    if (v == "0" || v == "off" || v == "false")
      value = false;
    else if (v == "1" || v == "on" || v == "true" || v == "default")
      value = true;
  }
  return value;
}

/// Whether SET assigns a server variable beyond the ones the gateway keeps
/// (autocommit, the character set: its connections speak utf8mb4 whatever
/// the client's), such as time_zone, sql_mode or the session's isolation
/// level.
bool sets_server_variable(std::string_view set_body) {
  if (lower(trim(set_body)).rfind("session transaction", 0) == 0)
    return true;
  for (auto item : sql::mysql_assignments(set_body)) {
    auto name = sql::mysql_assignment(item).first; // none: NAMES x, CHARACTER SET x
    if (!name.empty() && name != "autocommit" && name.rfind("character_set_", 0) != 0
        && name.rfind("collation_", 0) != 0)
      return true;
  }
  return false;
}

} // namespace

server_session::server_session(session_options opts) : opts_(std::move(opts)) {
  handshake_v10 h;
  h.server_version = opts_.server_version;
  h.connection_id = opts_.connection_id;
  h.scramble = opts_.scramble;
  h.capabilities = offered_capabilities | (opts_.tls_available ? client_ssl : 0);
  h.status = status_autocommit; // every session starts so
  seq_ = 0;
  send(encode(h));
}

void server_session::feed(std::string_view bytes) {
  in_.append(bytes);
  process();
}

void server_session::send(std::string_view payload) {
  seq_ = frame(out_, payload, seq_);
}

void server_session::process() {
  while (state_ == state::login || state_ == state::idle) {
    packet p;
    auto r = next_packet(in_, opts_.max_message, p);
    if (r.status == decode_status::need_more)
      return;
    if (r.status == decode_status::error) {
      seq_ = 0;
      send(err_packet(1153, "08S01", "got a packet bigger than "
                                     "max_allowed_packet bytes"));
      state_ = state::closing;
      return;
    }
    in_.erase(0, r.consumed);
    seq_ = static_cast<uint8_t>(p.sequence + 1); // replies continue it
    if (state_ == state::login)
      handle_login(p);
    else
      handle_command(p);
  }
}

void server_session::handle_login(const packet& p) {
  if (!user_.empty()) {
    // The answer to our switch to mysql_native_password: just the token.
    events_.push_back(login_event{user_, p.payload, database_, ignores_space()});
    state_ = state::awaiting_accept;
    return;
  }
  auto r = parse_handshake_response(p.payload);
  if (r && r->ssl_request_only) {
    if (!opts_.tls_available || tls_) {
      send(err_packet(1043, "08S01", "TLS is not configured on this server; "
                                     "connect without SSL"));
      state_ = state::closing;
    } else {
      // What followed the request is TLS: it goes to the handshake, never
      // read here as plaintext commands.
      state_ = state::tls_handshake; // nothing more until the handshake
      events_.push_back(tls_event{std::exchange(in_, {})});
    }
    return;
  }
  if (!r || r->user.empty()) {
    send(err_packet(1043, "08S01", "bad handshake"));
    state_ = state::closing;
    return;
  }
  client_capabilities_ = r->capabilities;
  user_ = r->user;
  database_ = r->database;
  if (!r->auth_plugin.empty() && r->auth_plugin != native_plugin)
    return switch_to_native_password();
  events_.push_back(login_event{user_, r->auth_response, database_, ignores_space()});
  state_ = state::awaiting_accept;
}

/// AuthSwitchRequest: asks for a mysql_native_password token instead, over
/// the scramble of the greeting; the next packet carries it.
void server_session::switch_to_native_password() {
  std::string sw(1, '\xfe');
  sw += native_plugin;
  sw += '\0';
  sw += opts_.scramble;
  sw += '\0';
  send(sw);
  state_ = state::login;
}

void server_session::tls_started() {
  if (state_ != state::tls_handshake)
    return;
  tls_ = true;
  state_ = state::login; // the full handshake response comes next
  process();
}

void server_session::accept() {
  if (state_ != state::awaiting_accept)
    return;
  state_ = state::idle;
  if (std::exchange(changing_user_, false) && block_open_)
    end_block_with("ROLLBACK"); // its OK answers the COM_CHANGE_USER
  else
    send(ok_packet(0, 0, status(), 0));
  process();
}

void server_session::reject(const error_info& e) {
  send(err_packet(e.code, e.sqlstate, e.message));
  state_ = state::closing;
}

void server_session::handle_command(const packet& p) {
  auto cmd = parse_command(p.payload, client_capabilities_);
  if (!cmd) {
    send(err_packet(1047, "08S01", "unknown command"));
    return;
  }
  if (std::holds_alternative<com_quit>(*cmd)) {
    state_ = state::closing;
  } else if (std::holds_alternative<com_ping>(*cmd)) {
    send(ok_packet(0, 0, status(), 0));
  } else if (auto* db = std::get_if<com_init_db>(&*cmd)) {
    // Where the engine has databases to switch between, it checks that
    // this one exists, and the driver gives it to the client's connections.
    auto use = sql::mysql_use(db->database);
    if (opts_.settings_on_server && opts_.settings_on_server(use)) {
      start(std::move(use), {}, false);
    } else {
      database_ = db->database;
      send(ok_packet(0, 0, status(), 0));
    }
  } else if (std::holds_alternative<com_field_list>(*cmd)) {
    send(eof_packet(status(), 0)); // no column metadata here
  } else if (auto* q = std::get_if<com_query>(&*cmd)) {
    query(std::move(q->sql));
  } else if (auto* prep = std::get_if<com_stmt_prepare>(&*cmd)) {
    prepare(prep->sql);
  } else if (auto* exec = std::get_if<com_stmt_execute>(&*cmd)) {
    execute(*exec);
  } else if (auto* data = std::get_if<com_stmt_send_long_data>(&*cmd)) {
    // No reply is sent; the execute that follows reports the refusal.
    if (auto it = prepared_.find(data->statement); it != prepared_.end())
      it->second.long_data = true;
  } else if (auto* close = std::get_if<com_stmt_close>(&*cmd)) {
    if (auto it = prepared_.find(close->statement); it != prepared_.end()) {
      prepared_bytes_ -= it->second.sql.size();
      prepared_.erase(it); // no reply, by the protocol
    }
  } else if (std::holds_alternative<com_reset_connection>(*cmd)) {
    reset_connection();
  } else if (auto* change = std::get_if<com_change_user>(&*cmd)) {
    change_user(std::move(*change));
  } else if (auto* reset = std::get_if<com_stmt_reset>(&*cmd)) {
    auto it = prepared_.find(reset->statement);
    if (it == prepared_.end()) {
      send(err_packet(1243, "HY000", "unknown prepared statement handler"));
    } else {
      it->second.long_data = false;
      send(ok_packet(0, 0, status(), 0));
    }
  } else {
    send(err_packet(1047, "08S01", "unknown command"));
  }
}

/// COM_QUERY. A client that asked for CLIENT_MULTI_STATEMENTS may send a
/// script: its statements run in order, each answered with its own result
/// (all but the last flagged SERVER_MORE_RESULTS_EXISTS), up to the first
/// that fails, as MySQL does. Else the script is one statement, which the
/// engine refuses as MySQL would.
void server_session::query(std::string sql) {
  if ((client_capabilities_ & client_multi_statements) != 0) {
    std::vector<std::string_view> statements;
    sql::split_mysql_statements(sql, statements);
    if (statements.size() > 1) {
      script_.assign(statements.begin() + 1, statements.end());
      sql = std::string{statements.front()};
    }
  }
  run_statement(std::move(sql));
  run_rest_of_script();
}

void server_session::run_statement(std::string sql) {
  if (!answer_locally(sql))
    start(std::move(sql), {}, false);
}

/// The script's next statements, while each is answered at once (here)
/// or ended (end_statement).
void server_session::run_rest_of_script() {
  while (state_ == state::idle && !script_.empty()) {
    auto sql = std::move(script_.front());
    script_.pop_front();
    run_statement(std::move(sql));
  }
}

void server_session::start(std::string sql,
                           std::vector<std::optional<std::string>> params,
                           bool binary, std::vector<sql::literal_kind> kinds) {
  state_ = state::running;
  binary_rows_ = binary;
  diagnostics_.clear(); // an execute()'s own (a query's were cleared already)
  bool counts_found_rows = false;
  bool sets_last_insert_id = false;
  if (opts_.settings_on_server) {
    auto has = [&](std::string_view word) { return sql::contains_ignoring_case(sql, word); };
    bool last_id = has("last_insert_id");
    bool found = has("found_rows");
    bool id = has("connection_id");
    if ((last_id || found || id) && opts_.settings_on_server(sql)) {
      // The pooled connection's are whichever client's statement ran there
      // last: this session's own go in instead. Its id is the one KILL
      // takes, the handshake's.
      if (last_id)
        sql = sql::replace_mysql_call(sql, "last_insert_id", std::to_string(last_insert_id_));
      if (found)
        sql = sql::replace_mysql_call(sql, "found_rows", std::to_string(found_rows_));
      if (id)
        sql = sql::replace_mysql_call(sql, "connection_id", std::to_string(opts_.connection_id));
      counts_found_rows = has("sql_calc_found_rows");
      // What is left of it after the calls without arguments went:
      // LAST_INSERT_ID(expr), which sets the connection's.
      sets_last_insert_id = last_id && has("last_insert_id");
    }
  }
  rows_sent_ = 0;
  calculated_found_rows_.reset();
  current_sql_ = sql;
  auto keyword = sql::leading_keyword(sql);
  using_ = keyword == "USE" ? sql::mysql_used_database(sql) : std::nullopt;
  // A SELECT or SET of no table and no function (of variables, say)
  // opens none: MariaDB's transaction starts at the first statement that
  // reads or writes one.
  bool reads_tables = (keyword != "SELECT" && keyword != "SET") || sql.find('(') != std::string::npos
                      || sql::contains_ignoring_case(sql, "from");
  if (!autocommit_ && !block_open_ && reads_tables
      && sql::transaction_effect_of(sql, keyword) == sql::transaction_effect::none) {
    // The statement opens a block implicitly, as on MySQL: the backend
    // connection, shared and in autocommit, is told so first.
    after_begin_ = query_event{std::move(sql), std::move(params), sql::transaction_step::inside,
                               std::move(kinds), {}, counts_found_rows, sets_last_insert_id};
    current_step_ = sql::transaction_step::begin;
    events_.push_back(query_event{"BEGIN", {}, current_step_, {}, // SQLite knows no START
                                  std::exchange(next_transaction_, {})});
    return;
  }
  current_step_ = sql::transaction_step_of(sql, keyword, block_open_);
  events_.push_back(query_event{std::move(sql), std::move(params), current_step_, std::move(kinds),
                                std::exchange(next_transaction_, {}), counts_found_rows,
                                sets_last_insert_id});
}

void server_session::set_autocommit(bool on) {
  bool commits = on && !autocommit_ && block_open_; // as MySQL does
  autocommit_ = on;
  if (commits)
    end_block_with("COMMIT");
  else
    send(ok_packet(0, 0, status(), 0));
}

void server_session::end_block_with(std::string sql) {
  state_ = state::running;
  current_sql_ = std::move(sql);
  current_step_ = sql::transaction_step::end;
  events_.push_back(query_event{current_sql_, {}, current_step_});
}

/// As MySQL: an open block rolls back, autocommit is on again, prepared
/// statements go; the user and the database stay. Pools send it when a
/// connection goes back (mysql2's resetOnRelease, Connector/J's
/// useResetConnection).
/// What a reset and a change of user forget: the session's values, its
/// prepared statements; autocommit is on again.
void server_session::start_afresh() {
  ++resets_;
  last_insert_id_ = 0;
  found_rows_ = 0;
  diagnostics_.clear(); // the last statement's error may tell another user's data
  next_transaction_.clear();
  prepared_.clear();
  prepared_bytes_ = 0;
  autocommit_ = true;
}

void server_session::reset_connection() {
  start_afresh();
  if (block_open_)
    end_block_with("ROLLBACK");
  else
    send(ok_packet(0, 0, status(), 0));
}

/// As MySQL: the new user logs in over the greeting's scramble, then the
/// session is as new (an open block rolls back, autocommit is on, prepared
/// statements go) in the database named. A refused login closes the
/// connection.
void server_session::change_user(com_change_user c) {
  if (c.user.empty()) {
    send(err_packet(1045, "28000", "Access denied: no user name"));
    state_ = state::closing;
    return;
  }
  start_afresh();
  changing_user_ = true;
  user_ = std::move(c.user);
  database_ = std::move(c.database);
  if (!c.auth_plugin.empty() && c.auth_plugin != native_plugin)
    return switch_to_native_password();
  events_.push_back(login_event{user_, std::move(c.auth_response), database_, ignores_space()});
  state_ = state::awaiting_accept;
}

uint16_t server_session::status() const {
  return static_cast<uint16_t>((autocommit_ ? status_autocommit : 0)
                               | (block_open_ ? status_in_trans : 0)
                               | (script_.empty() && !more_results_ ? 0 : status_more_results_exist));
}

void server_session::after_statement(bool ok) {
  if (current_step_ == sql::transaction_step::begin && ok)
    block_open_ = true;
  else if (current_step_ == sql::transaction_step::end)
    block_open_ = false; // committed, rolled back, or gone with a failed COMMIT
  current_step_ = sql::transaction_step::none;
}

/// COM_STMT_PREPARE: the statement is checked when it first runs, so the
/// answer declares its parameters and leaves its columns to the execute's
/// result set, which carries them.
void server_session::prepare(const std::string& sql) {
  if (prepared_.size() >= max_prepared_per_connection
      || prepared_bytes_ + sql.size() > opts_.max_prepared_bytes) {
    send(err_packet(1461, "42000", "too many prepared statements on this "
                                   "connection; close some first"));
    return;
  }
  prepared_statement stmt;
  stmt.sql = sql::replace_placeholders(sql, sql::placeholder_style::question_mark,
                                       [&](size_t n) {
                                         stmt.params = n;
                                         return "$" + std::to_string(n);
                                       });
  auto id = next_statement_id_++;
  std::string ok(1, '\0');
  for (int i = 0; i < 4; ++i)
    ok += static_cast<char>((id >> (8 * i)) & 0xFF);
  ok += '\0'; // columns: none declared
  ok += '\0';
  ok += static_cast<char>(stmt.params & 0xFF);
  ok += static_cast<char>((stmt.params >> 8) & 0xFF);
  ok += '\0';         // reserved
  ok.append(2, '\0'); // warnings
  send(ok);
  if (stmt.params > 0) {
    for (size_t i = 0; i < stmt.params; ++i)
      send(column_definition({"?", {type_id::varchar}}));
    send(eof_packet(status(), 0));
  }
  prepared_bytes_ += stmt.sql.size();
  prepared_.emplace(id, std::move(stmt));
}

void server_session::execute(const com_stmt_execute& cmd) {
  auto it = prepared_.find(cmd.statement);
  if (it == prepared_.end()) {
    send(err_packet(1243, "HY000", "unknown prepared statement handler"));
    return;
  }
  auto& stmt = it->second;
  if (stmt.long_data) {
    stmt.long_data = false;
    send(err_packet(1235, "42000", "COM_STMT_SEND_LONG_DATA is not "
                                   "supported; send the value with the "
                                   "execute"));
    return;
  }
  auto params = decode_parameters(cmd.params, stmt.params, stmt.types);
  if (!params) {
    send(err_packet(1210, "HY000", "incorrect arguments to "
                                   "mysqld_stmt_execute"));
    return;
  }
  std::vector<sql::literal_kind> kinds;
  kinds.reserve(stmt.types.size());
  for (const auto& t : stmt.types)
    kinds.push_back(literal_kind_of(t));
  start(stmt.sql, std::move(*params), true, std::move(kinds));
}

/// The questions clients ask on connect, answered without an engine:
/// session variables, the current database, warnings, SET.
bool server_session::answer_locally(const std::string& sql) {
  auto text = trim(sql);
  auto kw = sql::leading_keyword(text);
  auto low = lower(text);
  if (low != "show warnings" && low != "show errors")
    diagnostics_.clear(); // any other statement has its own
  if (kw == "SET") {
    auto body = sql::after_leading_keyword(text);
    bool user_variables = sql::leaves_session_state(text); // the server keeps them
    if (!user_variables && lower(body).starts_with("transaction ") && opts_.settings_on_server
        && opts_.settings_on_server(text)) {
      if (block_open_) // refused by the server inside a block, as MySQL does
        return false;
      next_transaction_ = std::string{text};
      send(ok_packet(0, 0, status(), 0));
      return true;
    }
    auto autocommit = autocommit_assignment(body);
    bool to_server = user_variables
                     || (opts_.settings_on_server && sets_server_variable(body)
                         && opts_.settings_on_server(text));
    if (!to_server) {
      if (autocommit)
        set_autocommit(*autocommit);
      else
        send(ok_packet(0, 0, status(), 0));
      return true;
    }
    if (autocommit) { // the gateway's, with the rest for the server
      std::string rest;
      for (auto item : sql::mysql_assignments(body))
        if (sql::mysql_assignment(item).first != "autocommit")
          rest += (rest.empty() ? "SET " : ", ") + std::string{item};
      if (rest.empty()) { // what looked like a user variable was not one
        set_autocommit(*autocommit);
        return true;
      }
      if (*autocommit && !autocommit_ && block_open_) { // MySQL would commit first
        send(err_packet(1235, "42000", "SET autocommit = 1 together with other assignments "
                                       "inside a transaction is not supported here: COMMIT "
                                       "first, or set autocommit on its own"));
        return true;
      }
      autocommit_ = *autocommit;
      start(std::move(rest), {}, false); // a SET opens no block (start)
      return true;
    }
    return false;
  }
  if (kw == "KILL") {
    // Connection ids are ours, not a backend's: the gateway answers.
    // KILL [HARD | SOFT] [CONNECTION | QUERY [ID]] id, as MariaDB reads it.
    auto rest = value_text(text.substr(4));
    std::string_view words = rest;
    auto next_word = [&](std::string_view word) {
      auto head = lower(words.substr(0, word.size() + 1));
      if (head.starts_with(word) && (head.size() == word.size() || std::isspace(static_cast<unsigned char>(head.back())))) {
        words = trim(words.substr(word.size()));
        return true;
      }
      return false;
    };
    if (!next_word("hard"))
      next_word("soft");
    bool query_only = next_word("query");
    if (query_only)
      next_word("id");
    else
      next_word("connection");
    uint32_t id = 0;
    auto r = std::from_chars(words.data(), words.data() + words.size(), id);
    if (words.empty() || r.ec != std::errc{} || r.ptr != words.data() + words.size()) {
      send(err_packet(1064, "42000", "expected KILL [HARD | SOFT] [CONNECTION | QUERY [ID]] <id>"));
      return true;
    }
    state_ = state::running;
    current_sql_ = std::string{text};
    events_.push_back(kill_event{id, query_only});
    return true;
  }
  // This session's own, whichever pooled connection ran its statements:
  // that connection's may be another client's since.
  for (auto [call, value] : {std::pair{std::string_view{"last_insert_id()"}, last_insert_id_},
                             std::pair{std::string_view{"found_rows()"}, found_rows_},
                             std::pair{std::string_view{"connection_id()"}, uint64_t{opts_.connection_id}}}) {
    if (!low.starts_with("select ") || low.compare(7, call.size(), call) != 0
        || !opts_.settings_on_server || !opts_.settings_on_server(text))
      continue;
    auto rest = trim(std::string_view{text}.substr(7 + call.size()));
    auto alias = lower(rest).starts_with("as ") ? trim(rest.substr(3)) : rest;
    bool plain = std::all_of(alias.begin(), alias.end(), [](unsigned char c) {
      return std::isalnum(c) || c == '_';
    });
    if (!plain)
      break; // the engine answers, with this session's value spliced in
    std::vector<column> cols{{alias.empty() ? std::string{text.substr(7, call.size())} : std::string{alias},
                              {type_id::bigint}}};
    send_result(cols, row_batch{1, {cell{std::to_string(value)}}});
    return true;
  }
  // The last statement's, whichever connection it ran on: that one's may
  // be another client's since.
  if (low == "show warnings" || low == "show errors") {
    std::vector<column> cols{{"Level", {type_id::varchar}},
                             {"Code", {type_id::bigint}},
                             {"Message", {type_id::varchar}}};
    row_batch rows{3, {}};
    for (const auto& d : diagnostics_) {
      if (low == "show errors" && d.level != "Error")
        continue;
      rows.cells.insert(rows.cells.end(), {cell{d.level}, cell{std::to_string(d.code)}, cell{d.message}});
    }
    send_result(cols, rows);
    return true;
  }
  if ((low == "select database()" || low == "select schema()")
      && !(opts_.settings_on_server && opts_.settings_on_server(text))) {
    std::vector<column> cols{{std::string{text.substr(7)}, {type_id::varchar}}};
    row_batch rows{1, {}};
    rows.cells.push_back(database_.empty() ? cell{} : cell{database_});
    send_result(cols, rows);
    return true;
  }
  if (kw == "SELECT" && low.find("@@") != std::string::npos
      && low.find(" from ") == std::string::npos) {
    // SELECT @@a, @@b [AS] name [LIMIT 1]
    auto uncommented = value_text(text.substr(6));
    std::string_view list = uncommented;
    std::string_view tail;
    if (auto limit = lower(list).find(" limit "); limit != std::string::npos) {
      tail = list.substr(limit);
      list = list.substr(0, limit);
    }
    auto items = select_items(list);
    bool ours = std::any_of(items.begin(), items.end(), [](const select_item& i) {
      return sql::contains_ignoring_case(i.text, "autocommit");
    });
    // Where the engine has the variables, it answers (with what the
    // client SET); autocommit is the gateway's, given to it as a value.
    if (opts_.settings_on_server && opts_.settings_on_server(text)) {
      if (!ours)
        return false;
      std::string rewritten = "SELECT ";
      for (const auto& item : items) {
        if (rewritten.size() > 7)
          rewritten += ", ";
        if (is_autocommit(item.variable))
          rewritten += std::string(autocommit_ ? "1" : "0") + " AS `" + std::string{item.name} + "`";
        else
          rewritten += with_autocommit(item.text, autocommit_);
      }
      start(rewritten + std::string{tail}, {}, false);
      return true;
    }
    std::vector<column> cols;
    row_batch rows{0, {}};
    for (const auto& item : items) {
      if (item.variable.empty())
        return false; // not only variables: leave it to the engine
      cols.push_back({std::string{item.name},
                      {is_autocommit(item.variable) ? type_id::bigint : type_id::varchar}});
      rows.cells.emplace_back(variable_value(item.variable, opts_.server_version, autocommit_));
    }
    rows.width = cols.size();
    send_result(cols, rows);
    return true;
  }
  return false;
}

/// Column count, definitions, EOF: what opens a result set.
template <class Definition>
void server_session::send_columns(size_t count, Definition definition_of) {
  std::string encoded;
  put_lenenc_int(encoded, count);
  send(encoded);
  for (size_t i = 0; i < count; ++i)
    send(definition_of(i));
  send(eof_packet(status(), 0));
}

void server_session::send_columns(const std::vector<column>& cols) {
  send_columns(cols.size(), [&](size_t i) { return column_definition(cols[i]); });
}

void server_session::send_result(const std::vector<column>& cols,
                                 const row_batch& rows) {
  send_columns(cols);
  for (size_t r = 0; r < rows.rows(); ++r)
    send(text_row(cols, rows, r));
  send(eof_packet(status(), 0));
}

void server_session::columns(const std::vector<column>& cols, std::vector<server_field> fields) {
  if (state_ != state::running || after_begin_)
    return;
  // DuckDB answers DML and DDL with one "Count" column; MySQL clients
  // expect an OK packet with the affected rows.
  if (fields.empty() && !sql::returns_rows(sql::leading_keyword(current_sql_)) && cols.size() == 1
      && cols[0].name == "Count") {
    dml_count_ = 0;
    return;
  }
  current_columns_ = cols;
  if (cols.empty()) // a command: OK after it completes
    return;
  if (fields.size() != cols.size())
    return send_columns(cols);
  fields_ = std::move(fields);
  send_columns(fields_.size(), [&](size_t i) { return fields_[i].definition; });
}

void server_session::rows(const row_batch& batch) {
  if (after_begin_)
    return;
  if (dml_count_ && batch.rows() > 0 && batch.at(0, 0)) {
    const auto& v = *batch.at(0, 0);
    int64_t n = 0;
    std::from_chars(v.data(), v.data() + v.size(), n);
    dml_count_ = n;
    return;
  }
  if (state_ != state::running || current_columns_.empty())
    return;
  for (size_t r = 0; r < batch.rows(); ++r)
    send(binary_rows_ ? (fields_.empty() ? binary_row(current_columns_, batch, r)
                                         : binary_row(fields_, batch, r))
                      : text_row(current_columns_, batch, r));
  rows_sent_ += batch.rows();
}

void server_session::result_ends(int64_t affected_rows) {
  if (state_ != state::running || after_begin_)
    return;
  more_results_ = true;
  end_result(command_result{affected_rows});
  more_results_ = false;
  current_columns_.clear();
  fields_.clear();
  dml_count_.reset();
}

void server_session::complete(const command_result& result) {
  if (state_ != state::running)
    return;
  after_statement(true);
  if (after_begin_) { // the block is open: now the client's statement
    events_.push_back(std::move(*after_begin_));
    after_begin_.reset();
    current_step_ = sql::transaction_step::inside;
    return;
  }
  if (!current_columns_.empty()) // a SELECT: FOUND_ROWS() counts its rows
    found_rows_ = calculated_found_rows_.value_or(rows_sent_);
  end_result(result);
  if (using_)
    database_ = std::move(*using_);
  if (result.insert_id != 0)
    last_insert_id_ = result.insert_id;
  end_statement();
}

namespace {

/// "Rows matched: 3  Changed: 0  Warnings: 0" (an UPDATE's summary): 3.
std::optional<int64_t> rows_matched(std::string_view info) {
  constexpr std::string_view prefix = "Rows matched: ";
  if (!info.starts_with(prefix))
    return std::nullopt;
  int64_t n = 0;
  auto digits = info.substr(prefix.size());
  auto r = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  return r.ec == std::errc{} ? std::optional<int64_t>{n} : std::nullopt;
}

} // namespace

/// A result set's closing EOF, or a command's OK. A client that asked for
/// CLIENT_FOUND_ROWS counts an UPDATE's matched rows, not its changed
/// ones: the pooled connections are opened without it.
void server_session::end_result(const command_result& result) {
  auto affected = dml_count_ ? *dml_count_ : result.affected_rows;
  if ((client_capabilities_ & client_found_rows) != 0)
    affected = rows_matched(result.info).value_or(affected);
  if (current_columns_.empty())
    send(ok_packet(static_cast<uint64_t>(std::max<int64_t>(affected, 0)), result.insert_id, status(),
                   result.warnings, result.info));
  else
    send(eof_packet(status(), result.warnings));
}

void server_session::end_statement() {
  using_.reset();
  current_columns_.clear();
  fields_.clear();
  dml_count_.reset();
  binary_rows_ = false;
  state_ = state::idle;
  run_rest_of_script();
  process(); // commands that arrived meanwhile
}

void server_session::fail(const error_info& e) {
  if (state_ != state::running)
    return;
  after_statement(false);
  after_begin_.reset(); // the client's statement never ran: this is its answer
  script_.clear();      // nor do those after it
  diagnostics_ = {{"Error", e.code, e.message}};
  send(err_packet(e.code, e.sqlstate, e.message));
  end_statement();
}

} // namespace qf::mysqlwire
