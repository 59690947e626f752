// Embedded SQLite: one sqlite3 handle per connection; an omitted
// databasePath means one shared in-memory database for the whole cluster.
#include "engines/sqlite_engine.hpp"


#include <sqlite3.h>

#include <atomic>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <thread>

namespace qf::engines {

namespace {

std::string lower(std::string_view s) {
  std::string out{s};
  for (auto& c : out)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

/// SQLite's type affinity rules, mapped onto our types.
std::optional<sql_type> type_from_declared(const char* decl) {
  if (!decl)
    return std::nullopt;
  auto d = lower(decl);
  auto has = [&](std::string_view s) { return d.find(s) != std::string::npos; };
  if (has("bool"))
    return sql_type{type_id::boolean};
  if (has("int"))
    return sql_type{type_id::bigint};
  if (has("char") || has("clob") || has("text"))
    return sql_type{type_id::varchar};
  if (has("blob"))
    return sql_type{type_id::varbinary};
  if (has("real") || has("floa") || has("doub"))
    return sql_type{type_id::double_precision};
  return std::nullopt; // NUMERIC, DATE...: decided by the stored values
}

sql_type type_from_value(int storage_class) {
  switch (storage_class) {
    case SQLITE_INTEGER:
      return {type_id::bigint};
    case SQLITE_FLOAT:
      return {type_id::double_precision};
    case SQLITE_BLOB:
      return {type_id::varbinary};
    case SQLITE_NULL:
      return {type_id::unknown};
    default:
      return {type_id::varchar};
  }
}

std::string double_to_string(double v) {
  if (std::isnan(v))
    return "NaN";
  if (std::isinf(v))
    return v > 0 ? "Infinity" : "-Infinity";
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, end);
}

error_kind classify(int code, const char* message) {
  if (code == SQLITE_INTERRUPT)
    return error_kind::cancelled;
  if (message && std::string_view{message}.find("syntax error")
                   != std::string_view::npos)
    return error_kind::syntax;
  if (code == SQLITE_ERROR || code == SQLITE_CONSTRAINT
      || code == SQLITE_MISMATCH || code == SQLITE_RANGE)
    return error_kind::user;
  return error_kind::internal;
}

void sleep_ms(sqlite3_context* ctx, int, sqlite3_value** argv) {
  auto* flag = static_cast<std::atomic<bool>*>(sqlite3_user_data(ctx));
  auto wanted = sqlite3_value_int64(argv[0]);
  auto until = std::chrono::steady_clock::now()
               + std::chrono::milliseconds(wanted);
  while (std::chrono::steady_clock::now() < until) {
    if (flag->load()) {
      sqlite3_result_error_code(ctx, SQLITE_INTERRUPT);
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  sqlite3_result_int64(ctx, wanted);
}

class sqlite_cursor : public cursor {
public:
  /// Takes a statement whose first step returned `first_step`.
  sqlite_cursor(sqlite3* db, sqlite3_stmt* stmt, int first_step)
    : db_(db), stmt_(stmt), step_(first_step) {
    auto n = sqlite3_column_count(stmt_);
    for (int i = 0; i < n; ++i) {
      auto declared = type_from_declared(sqlite3_column_decltype(stmt_, i));
      auto type = declared ? *declared
                           : step_ == SQLITE_ROW
                               ? type_from_value(sqlite3_column_type(stmt_, i))
                               : sql_type{type_id::varchar};
      columns_.push_back({sqlite3_column_name(stmt_, i), type});
    }
    affected_ = n == 0 ? sqlite3_changes64(db_) : -1;
  }

  ~sqlite_cursor() override {
    sqlite3_finalize(stmt_);
  }

  bool fetch(row_batch& out, size_t max_rows) override {
    out.width = columns_.size();
    for (size_t taken = 0; taken < max_rows; ++taken) {
      if (step_ == SQLITE_DONE)
        return false;
      if (step_ != SQLITE_ROW)
        throw engine_error(classify(step_, sqlite3_errmsg(db_)),
                           sqlite3_errmsg(db_));
      append_row(out);
      step_ = sqlite3_step(stmt_);
    }
    return step_ == SQLITE_ROW;
  }

private:
  void append_row(row_batch& out) {
    for (int i = 0; i < static_cast<int>(columns_.size()); ++i) {
      switch (sqlite3_column_type(stmt_, i)) {
        case SQLITE_NULL:
          out.cells.emplace_back();
          break;
        case SQLITE_INTEGER: {
          auto v = sqlite3_column_int64(stmt_, i);
          if (columns_[i].type.id == type_id::boolean)
            out.cells.emplace_back(v ? "true" : "false");
          else
            out.cells.emplace_back(std::to_string(v));
          break;
        }
        case SQLITE_FLOAT:
          out.cells.emplace_back(double_to_string(sqlite3_column_double(stmt_, i)));
          break;
        default: {
          auto* p = static_cast<const char*>(sqlite3_column_blob(stmt_, i));
          auto n = static_cast<size_t>(sqlite3_column_bytes(stmt_, i));
          out.cells.emplace_back(std::string(p ? p : "", n));
        }
      }
    }
  }

  sqlite3* db_;
  sqlite3_stmt* stmt_;
  int step_;
};

/// The pragmas that take an argument only to read (schema introspection).
bool reading_pragma(std::string_view name) {
  for (std::string_view reader : {"table_info", "table_xinfo", "table_list", "index_list",
                                  "index_info", "index_xinfo", "foreign_key_list",
                                  "foreign_key_check", "integrity_check", "quick_check"})
    if (lower(name) == reader)
      return true;
  return false;
}

/// Refuses what would reach beyond the cluster's database: ATTACH, and
/// VACUUM INTO, which attaches its target (both create or read any file the
/// gateway may); and a PRAGMA that sets something, which would stay with
/// the pooled connection for its next clients (query_only, foreign_keys)
/// or change the database file itself (journal_mode). Reading one is fine.
int confine(void*, int action, const char* name, const char* value, const char*, const char*) {
  if (action == SQLITE_ATTACH)
    return SQLITE_DENY;
  if (action == SQLITE_PRAGMA && value && !(name && reading_pragma(name)))
    return SQLITE_DENY;
  return SQLITE_OK;
}

class sqlite_connection : public connection {
public:
  /// confined: the client's SQL stays within the database (no ATTACH).
  sqlite_connection(const std::string& uri, std::shared_ptr<const void> owner, bool confined)
    : owner_(std::move(owner)), uri_(uri), confined_(confined) {
    open();
  }

  ~sqlite_connection() override {
    sqlite3_close_v2(db_);
  }

  sqlite_connection(const sqlite_connection&) = delete;
  sqlite_connection& operator=(const sqlite_connection&) = delete;

  using connection::execute;

  std::unique_ptr<cursor> execute(const std::string& sql,
                                  const parameters& params) override {
    interrupted_.store(false);
    const char* tail = sql.c_str();
    const char* end = tail + sql.size();
    std::unique_ptr<cursor> last;
    while (tail < end) {
      sqlite3_stmt* stmt = nullptr;
      auto rc = sqlite3_prepare_v2(db_, tail, static_cast<int>(end - tail),
                                   &stmt, &tail);
      if (rc != SQLITE_OK)
        throw engine_error(classify(rc, sqlite3_errmsg(db_)),
                           sqlite3_errmsg(db_));
      if (!stmt)
        continue; // whitespace or a comment
      last.reset(); // an earlier statement's rows are not streamed
      if (tail >= end)
        bind(stmt, params);
      auto first = sqlite3_step(stmt);
      if (first != SQLITE_ROW && first != SQLITE_DONE) {
        std::string msg = sqlite3_errmsg(db_);
        auto kind = interrupted_.load() ? error_kind::cancelled
                                        : classify(first, msg.c_str());
        sqlite3_finalize(stmt);
        throw engine_error(kind, msg);
      }
      last = std::make_unique<sqlite_cursor>(db_, stmt, first);
    }
    if (!last)
      throw engine_error(error_kind::syntax, "empty query");
    return last;
  }

  void interrupt() override {
    interrupted_.store(true);
    std::lock_guard guard{db_mtx_};
    if (db_)
      sqlite3_interrupt(db_);
  }

protected:
  bool in_transaction() const override {
    return !sqlite3_get_autocommit(db_);
  }

  void renew_session() override {
    {
      std::lock_guard guard{db_mtx_};
      sqlite3_close_v2(db_);
      db_ = nullptr;
    }
    open();
  }

private:
  void open() {
    auto flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_URI
                 | SQLITE_OPEN_NOMUTEX;
    sqlite3* db = nullptr;
    if (sqlite3_open_v2(uri_.c_str(), &db, flags, nullptr) != SQLITE_OK) {
      std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
      sqlite3_close(db);
      throw engine_error(error_kind::internal, "cannot open SQLite: " + msg);
    }
    sqlite3_busy_timeout(db, 5000);
    if (confined_) {
      sqlite3_set_authorizer(db, confine, nullptr);
      sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
    }
    sqlite3_create_function_v2(db, "sleep_ms", 1, SQLITE_UTF8, &interrupted_,
                               sleep_ms, nullptr, nullptr, nullptr);
    std::lock_guard guard{db_mtx_};
    db_ = db;
  }

  /// Binds $n (or ?n, or plain ?) placeholders to params[n - 1].
  void bind(sqlite3_stmt* stmt, const parameters& params) {
    auto count = sqlite3_bind_parameter_count(stmt);
    for (int i = 1; i <= count; ++i) {
      const char* name = sqlite3_bind_parameter_name(stmt, i);
      size_t index = static_cast<size_t>(i);
      if (name && name[0] != '\0' && name[1] != '\0')
        index = std::strtoul(name + 1, nullptr, 10);
      if (index == 0 || index > params.size()) {
        sqlite3_finalize(stmt);
        throw engine_error(error_kind::user,
                           "no value for parameter "
                             + std::string{name ? name : "?"});
      }
      const auto& p = params[index - 1];
      if (p)
        sqlite3_bind_text(stmt, i, p->data(), static_cast<int>(p->size()),
                          SQLITE_TRANSIENT);
      else
        sqlite3_bind_null(stmt, i);
    }
  }

  std::shared_ptr<const void> owner_;
  sqlite3* db_ = nullptr;
  std::atomic<bool> interrupted_{false};
  std::string uri_;
  bool confined_;
  std::mutex db_mtx_; // db_ against interrupt() from another thread
};

class sqlite_database : public database,
                        public std::enable_shared_from_this<sqlite_database> {
public:
  explicit sqlite_database(const config::cluster& cfg) {
    if (cfg.database_path.empty()) {
      static std::atomic<uint64_t> counter{0};
      uri_ = "file:qf-" + cfg.name + "-" + std::to_string(++counter)
             + "?mode=memory&cache=shared";
    } else {
      uri_ = cfg.database_path;
    }
    // Keeps a shared in-memory database alive while no query runs.
    // initSql goes through execute(), not run(): the keeper never renews
    // its session (closing it could end a shared in-memory database).
    keeper_ = std::make_unique<sqlite_connection>(uri_, nullptr, false);
    confined_ = !cfg.external_access;
    for (const auto& sql : cfg.init_sql) {
      auto cur = keeper_->execute(sql);
      row_batch sink;
      while (cur->fetch(sink, 1024))
        sink.cells.clear();
    }
  }

  std::unique_ptr<connection> connect() override {
    return std::make_unique<sqlite_connection>(uri_, shared_from_this(), confined_);
  }

  std::string_view engine_type() const override {
    return "sqlite";
  }

private:
  std::string uri_;
  bool confined_ = true;
  std::unique_ptr<sqlite_connection> keeper_;
};

} // namespace

std::shared_ptr<database> open_sqlite(const config::cluster& cfg) {
  return std::make_shared<sqlite_database>(cfg);
}

} // namespace qf::engines
