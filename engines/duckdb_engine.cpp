// Embedded DuckDB through its C API: streaming results, typed columns,
// interrupt, and a `sleep_ms(ms)` function that honours the interrupt.
#include "engines/duckdb_engine.hpp"

#include "protocols/sql/statements.hpp"

#include <duckdb.h>

#include <atomic>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <mutex>
#include <thread>

namespace qf::engines {

namespace {

/// Interrupt flags by DuckDB connection id, so that `sleep_ms` running on
/// any DuckDB thread can see that its own connection was interrupted.
struct interrupt_registry {
  std::mutex mtx;
  std::map<idx_t, std::shared_ptr<std::atomic<bool>>> flags;

  std::shared_ptr<std::atomic<bool>> find(idx_t id) {
    std::lock_guard guard{mtx};
    auto i = flags.find(id);
    return i == flags.end() ? nullptr : i->second;
  }
};

idx_t connection_id(duckdb_connection con) {
  duckdb_client_context ctx = nullptr;
  duckdb_connection_get_client_context(con, &ctx);
  auto id = duckdb_client_context_get_connection_id(ctx);
  duckdb_destroy_client_context(&ctx);
  return id;
}

void sleep_bind(duckdb_bind_info info) {
  duckdb_client_context ctx = nullptr;
  duckdb_scalar_function_get_client_context(info, &ctx);
  auto* id = new idx_t{duckdb_client_context_get_connection_id(ctx)};
  duckdb_destroy_client_context(&ctx);
  duckdb_scalar_function_set_bind_data(
    info, id, [](void* p) { delete static_cast<idx_t*>(p); });
  duckdb_scalar_function_set_bind_data_copy(
    info, [](void* p) -> void* { return new idx_t{*static_cast<idx_t*>(p)}; });
}

void sleep_run(duckdb_function_info info, duckdb_data_chunk input,
               duckdb_vector output) {
  auto* registry = static_cast<interrupt_registry*>(
    duckdb_scalar_function_get_extra_info(info));
  auto id = *static_cast<idx_t*>(duckdb_scalar_function_get_bind_data(info));
  auto flag = registry->find(id);
  auto rows = duckdb_data_chunk_get_size(input);
  auto in = duckdb_data_chunk_get_vector(input, 0);
  auto* ms = static_cast<int64_t*>(duckdb_vector_get_data(in));
  auto* validity = duckdb_vector_get_validity(in);
  auto* out = static_cast<int64_t*>(duckdb_vector_get_data(output));
  for (idx_t r = 0; r < rows; ++r) {
    auto wanted = duckdb_validity_row_is_valid(validity, r) ? ms[r] : 0;
    auto until = std::chrono::steady_clock::now()
                 + std::chrono::milliseconds(wanted);
    while (std::chrono::steady_clock::now() < until) {
      if (flag && flag->load()) {
        duckdb_scalar_function_set_error(info, "INTERRUPT Error: Interrupted!");
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    out[r] = wanted;
  }
}

void register_sleep(duckdb_connection con, interrupt_registry* registry) {
  auto fn = duckdb_create_scalar_function();
  duckdb_scalar_function_set_name(fn, "sleep_ms");
  auto bigint = duckdb_create_logical_type(DUCKDB_TYPE_BIGINT);
  duckdb_scalar_function_add_parameter(fn, bigint);
  duckdb_scalar_function_set_return_type(fn, bigint);
  duckdb_destroy_logical_type(&bigint);
  duckdb_scalar_function_set_volatile(fn);
  duckdb_scalar_function_set_special_handling(fn); // NULL in: still called
  duckdb_scalar_function_set_extra_info(fn, registry, nullptr);
  duckdb_scalar_function_set_bind(fn, sleep_bind);
  duckdb_scalar_function_set_function(fn, sleep_run);
  duckdb_register_scalar_function(con, fn);
  duckdb_destroy_scalar_function(&fn);
}

error_kind classify(const char* message, duckdb_error_type type) {
  if (type == DUCKDB_ERROR_INTERRUPT)
    return error_kind::cancelled;
  if (type == DUCKDB_ERROR_PARSER)
    return error_kind::syntax;
  if (type == DUCKDB_ERROR_INTERNAL || type == DUCKDB_ERROR_FATAL)
    return error_kind::internal;
  if (message && std::string_view{message}.find("Interrupted") 
                   != std::string_view::npos)
    return error_kind::cancelled;
  return error_kind::user;
}

// -- text rendering of DuckDB vectors ----------------------------------------

std::string int128_to_string(__int128 v) {
  if (v == 0)
    return "0";
  bool negative = v < 0;
  unsigned __int128 u = negative ? -static_cast<unsigned __int128>(v)
                                 : static_cast<unsigned __int128>(v);
  char buf[48];
  int i = sizeof(buf);
  while (u > 0) {
    buf[--i] = static_cast<char>('0' + static_cast<int>(u % 10));
    u /= 10;
  }
  if (negative)
    buf[--i] = '-';
  return std::string(buf + i, sizeof(buf) - static_cast<size_t>(i));
}

std::string decimal_to_string(__int128 unscaled, uint8_t scale) {
  auto digits = int128_to_string(unscaled);
  if (scale == 0)
    return digits;
  bool negative = digits[0] == '-';
  if (negative)
    digits.erase(0, 1);
  if (digits.size() <= scale)
    digits.insert(0, scale + 1 - digits.size(), '0');
  digits.insert(digits.size() - scale, 1, '.');
  return negative ? "-" + digits : digits;
}

template <class T>
std::string number_to_string(T v) {
  char buf[64];
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(v))
      return "NaN";
    if (std::isinf(v))
      return v > 0 ? "Infinity" : "-Infinity";
  }
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, end);
}

std::string date_to_string(duckdb_date d) {
  if (d.days == std::numeric_limits<int32_t>::max())
    return "infinity";
  if (d.days == -std::numeric_limits<int32_t>::max())
    return "-infinity";
  auto s = duckdb_from_date(d);
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02d", s.year, s.month, s.day);
  return buf;
}

std::string time_to_string(int64_t micros) {
  auto t = duckdb_from_time(duckdb_time{micros});
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%02d:%02d:%02d.%06d", t.hour, t.min, t.sec,
                t.micros);
  return buf;
}

std::string timestamp_to_string(int64_t micros) {
  if (micros == std::numeric_limits<int64_t>::max())
    return "infinity";
  if (micros == -std::numeric_limits<int64_t>::max())
    return "-infinity";
  auto ts = duckdb_from_timestamp(duckdb_timestamp{micros});
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02d %02d:%02d:%02d.%06d",
                ts.date.year, ts.date.month, ts.date.day, ts.time.hour,
                ts.time.min, ts.time.sec, ts.time.micros);
  return buf;
}

std::string uuid_to_string(duckdb_hugeint h) {
  // DuckDB flips the top bit so that UUIDs sort as signed integers.
  auto upper = static_cast<uint64_t>(h.upper) ^ (uint64_t{1} << 63);
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%08x-%04x-%04x-%04x-%012llx",
                static_cast<unsigned>(upper >> 32),
                static_cast<unsigned>((upper >> 16) & 0xffff),
                static_cast<unsigned>(upper & 0xffff),
                static_cast<unsigned>(h.lower >> 48),
                static_cast<unsigned long long>(h.lower & 0xffffffffffffULL));
  return buf;
}

std::string interval_to_string(duckdb_interval iv) {
  std::string out;
  auto part = [&](int64_t n, const char* unit) {
    if (n == 0)
      return;
    if (!out.empty())
      out += ' ';
    out += std::to_string(n) + ' ' + unit + (n == 1 || n == -1 ? "" : "s");
  };
  part(iv.months / 12, "year");
  part(iv.months % 12, "month");
  part(iv.days, "day");
  if (iv.micros != 0 || out.empty()) {
    auto us = iv.micros;
    auto sign = us < 0 ? "-" : "";
    us = us < 0 ? -us : us;
    char buf[48];
    std::snprintf(buf, sizeof(buf), "%s%02lld:%02lld:%02lld", sign,
                  static_cast<long long>(us / 3'600'000'000LL),
                  static_cast<long long>(us / 60'000'000LL % 60),
                  static_cast<long long>(us / 1'000'000LL % 60));
    std::string t = buf;
    if (us % 1'000'000 != 0) {
      std::snprintf(buf, sizeof(buf), ".%06lld",
                    static_cast<long long>(us % 1'000'000));
      t += buf;
    }
    if (!out.empty())
      out += ' ';
    out += t;
  }
  return out;
}

std::string_view string_of(duckdb_string_t* s) {
  return {duckdb_string_t_data(s), duckdb_string_t_length(*s)};
}

/// How one result column is read out of a vector.
struct column_reader {
  duckdb_type physical = DUCKDB_TYPE_INVALID;
  duckdb_type decimal_storage = DUCKDB_TYPE_INVALID;
  uint8_t scale = 0;
  std::vector<std::string> enum_values;
};

sql_type map_type(duckdb_logical_type t, column_reader& reader) {
  auto id = duckdb_get_type_id(t);
  reader.physical = id;
  switch (id) {
    case DUCKDB_TYPE_BOOLEAN:
      return {type_id::boolean};
    case DUCKDB_TYPE_TINYINT:
      return {type_id::tinyint};
    case DUCKDB_TYPE_SMALLINT:
    case DUCKDB_TYPE_UTINYINT:
      return {type_id::smallint};
    case DUCKDB_TYPE_INTEGER:
    case DUCKDB_TYPE_USMALLINT:
      return {type_id::integer};
    case DUCKDB_TYPE_BIGINT:
    case DUCKDB_TYPE_UINTEGER:
      return {type_id::bigint};
    case DUCKDB_TYPE_UBIGINT:
      return {type_id::decimal, 20, 0};
    case DUCKDB_TYPE_HUGEINT:
    case DUCKDB_TYPE_UHUGEINT:
      return {type_id::decimal, 38, 0};
    case DUCKDB_TYPE_FLOAT:
      return {type_id::real};
    case DUCKDB_TYPE_DOUBLE:
      return {type_id::double_precision};
    case DUCKDB_TYPE_DECIMAL:
      reader.decimal_storage = duckdb_decimal_internal_type(t);
      reader.scale = duckdb_decimal_scale(t);
      return {type_id::decimal, duckdb_decimal_width(t), reader.scale};
    case DUCKDB_TYPE_VARCHAR:
      return {type_id::varchar};
    case DUCKDB_TYPE_BLOB:
      return {type_id::varbinary};
    case DUCKDB_TYPE_DATE:
      return {type_id::date};
    case DUCKDB_TYPE_TIME:
      return {type_id::time, 6};
    case DUCKDB_TYPE_TIMESTAMP:
    case DUCKDB_TYPE_TIMESTAMP_S:
    case DUCKDB_TYPE_TIMESTAMP_MS:
    case DUCKDB_TYPE_TIMESTAMP_NS:
      return {type_id::timestamp, 6};
    case DUCKDB_TYPE_TIMESTAMP_TZ:
      return {type_id::timestamp_tz, 6};
    case DUCKDB_TYPE_UUID:
      return {type_id::uuid};
    case DUCKDB_TYPE_INTERVAL:
      return {type_id::interval};
    case DUCKDB_TYPE_ENUM: {
      reader.decimal_storage = duckdb_enum_internal_type(t);
      auto n = duckdb_enum_dictionary_size(t);
      for (uint32_t i = 0; i < n; ++i) {
        auto* v = duckdb_enum_dictionary_value(t, i);
        reader.enum_values.emplace_back(v);
        duckdb_free(v);
      }
      return {type_id::varchar};
    }
    case DUCKDB_TYPE_SQLNULL:
      return {type_id::unknown};
    default:
      return {type_id::varchar};
  }
}

cell read_cell(const column_reader& r, void* data, idx_t row) {
  switch (r.physical) {
    case DUCKDB_TYPE_BOOLEAN:
      return static_cast<bool*>(data)[row] ? "true" : "false";
    case DUCKDB_TYPE_TINYINT:
      return number_to_string(static_cast<int8_t*>(data)[row]);
    case DUCKDB_TYPE_SMALLINT:
      return number_to_string(static_cast<int16_t*>(data)[row]);
    case DUCKDB_TYPE_INTEGER:
      return number_to_string(static_cast<int32_t*>(data)[row]);
    case DUCKDB_TYPE_BIGINT:
      return number_to_string(static_cast<int64_t*>(data)[row]);
    case DUCKDB_TYPE_UTINYINT:
      return number_to_string(static_cast<uint8_t*>(data)[row]);
    case DUCKDB_TYPE_USMALLINT:
      return number_to_string(static_cast<uint16_t*>(data)[row]);
    case DUCKDB_TYPE_UINTEGER:
      return number_to_string(static_cast<uint32_t*>(data)[row]);
    case DUCKDB_TYPE_UBIGINT:
      return number_to_string(static_cast<uint64_t*>(data)[row]);
    case DUCKDB_TYPE_HUGEINT: {
      auto h = static_cast<duckdb_hugeint*>(data)[row];
      return int128_to_string(
        (static_cast<__int128>(h.upper) << 64) | h.lower);
    }
    case DUCKDB_TYPE_UHUGEINT: {
      auto h = static_cast<duckdb_uhugeint*>(data)[row];
      auto v = (static_cast<unsigned __int128>(h.upper) << 64) | h.lower;
      std::string out;
      do {
        out.insert(out.begin(), static_cast<char>('0' + static_cast<int>(v % 10)));
        v /= 10;
      } while (v > 0);
      return out;
    }
    case DUCKDB_TYPE_FLOAT:
      return number_to_string(static_cast<float*>(data)[row]);
    case DUCKDB_TYPE_DOUBLE:
      return number_to_string(static_cast<double*>(data)[row]);
    case DUCKDB_TYPE_DECIMAL:
      switch (r.decimal_storage) {
        case DUCKDB_TYPE_SMALLINT:
          return decimal_to_string(static_cast<int16_t*>(data)[row], r.scale);
        case DUCKDB_TYPE_INTEGER:
          return decimal_to_string(static_cast<int32_t*>(data)[row], r.scale);
        case DUCKDB_TYPE_BIGINT:
          return decimal_to_string(static_cast<int64_t*>(data)[row], r.scale);
        default: {
          auto h = static_cast<duckdb_hugeint*>(data)[row];
          return decimal_to_string(
            (static_cast<__int128>(h.upper) << 64) | h.lower, r.scale);
        }
      }
    case DUCKDB_TYPE_VARCHAR:
    case DUCKDB_TYPE_BLOB:
      return std::string{string_of(static_cast<duckdb_string_t*>(data) + row)};
    case DUCKDB_TYPE_DATE:
      return date_to_string(static_cast<duckdb_date*>(data)[row]);
    case DUCKDB_TYPE_TIME:
      return time_to_string(static_cast<duckdb_time*>(data)[row].micros);
    case DUCKDB_TYPE_TIMESTAMP:
    case DUCKDB_TYPE_TIMESTAMP_TZ:
      return timestamp_to_string(static_cast<int64_t*>(data)[row]);
    case DUCKDB_TYPE_TIMESTAMP_S:
      return timestamp_to_string(static_cast<int64_t*>(data)[row] * 1'000'000);
    case DUCKDB_TYPE_TIMESTAMP_MS:
      return timestamp_to_string(static_cast<int64_t*>(data)[row] * 1'000);
    case DUCKDB_TYPE_TIMESTAMP_NS:
      return timestamp_to_string(static_cast<int64_t*>(data)[row] / 1'000);
    case DUCKDB_TYPE_UUID:
      return uuid_to_string(static_cast<duckdb_hugeint*>(data)[row]);
    case DUCKDB_TYPE_INTERVAL:
      return interval_to_string(static_cast<duckdb_interval*>(data)[row]);
    case DUCKDB_TYPE_ENUM: {
      uint64_t index = 0;
      switch (r.decimal_storage) {
        case DUCKDB_TYPE_UTINYINT:
          index = static_cast<uint8_t*>(data)[row];
          break;
        case DUCKDB_TYPE_USMALLINT:
          index = static_cast<uint16_t*>(data)[row];
          break;
        default:
          index = static_cast<uint32_t*>(data)[row];
      }
      return index < r.enum_values.size() ? r.enum_values[index] : "";
    }
    case DUCKDB_TYPE_SQLNULL:
      return std::nullopt;
    default:
      return std::string{"(unsupported DuckDB type)"};
  }
}

/// Binds text values by the type DuckDB inferred for each placeholder, so
/// that "5" reaches an INTEGER parameter as 5.
void bind_parameters(duckdb_prepared_statement prepared,
                     const parameters& params) {
  auto wanted = duckdb_nparams(prepared);
  if (wanted != params.size())
    throw engine_error(error_kind::user,
                       "the statement has " + std::to_string(wanted)
                         + " parameters but " + std::to_string(params.size())
                         + " were given");
  for (idx_t i = 1; i <= wanted; ++i) {
    const auto& p = params[i - 1];
    duckdb_state ok = DuckDBSuccess;
    if (!p) {
      ok = duckdb_bind_null(prepared, i);
    } else {
      switch (duckdb_param_type(prepared, i)) {
        case DUCKDB_TYPE_BOOLEAN:
          ok = duckdb_bind_boolean(prepared, i,
                                   *p == "t" || *p == "true" || *p == "1");
          break;
        case DUCKDB_TYPE_TINYINT:
        case DUCKDB_TYPE_SMALLINT:
        case DUCKDB_TYPE_INTEGER:
        case DUCKDB_TYPE_BIGINT: {
          int64_t v = 0;
          auto [end, ec] = std::from_chars(p->data(), p->data() + p->size(), v);
          if (ec != std::errc{} || end != p->data() + p->size())
            throw engine_error(error_kind::user,
                               "invalid integer for parameter $"
                                 + std::to_string(i) + ": "" + *p + """);
          ok = duckdb_bind_int64(prepared, i, v);
          break;
        }
        default:
          // DuckDB casts from VARCHAR to what the placeholder needs.
          ok = duckdb_bind_varchar_length(prepared, i, p->data(), p->size());
      }
    }
    if (ok != DuckDBSuccess)
      throw engine_error(error_kind::user,
                         "cannot bind parameter $" + std::to_string(i));
  }
}

// -- cursor, connection, database --------------------------------------------

class duckdb_cursor : public cursor {
public:
  duckdb_cursor(duckdb_prepared_statement prepared, duckdb_result result)
    : prepared_(prepared), result_(result) {
    auto n = duckdb_column_count(&result_);
    readers_.resize(n);
    for (idx_t i = 0; i < n; ++i) {
      auto t = duckdb_column_logical_type(&result_, i);
      columns_.push_back({duckdb_column_name(&result_, i), map_type(t, readers_[i])});
      duckdb_destroy_logical_type(&t);
    }
  }

  ~duckdb_cursor() override {
    if (chunk_)
      duckdb_destroy_data_chunk(&chunk_);
    duckdb_destroy_result(&result_);
    duckdb_destroy_prepare(&prepared_);
  }

  bool fetch(row_batch& out, size_t max_rows) override {
    out.width = columns_.size();
    size_t taken = 0;
    while (taken < max_rows) {
      if (!chunk_ || offset_ >= duckdb_data_chunk_get_size(chunk_)) {
        if (chunk_)
          duckdb_destroy_data_chunk(&chunk_);
        chunk_ = done_ ? nullptr : duckdb_fetch_chunk(result_);
        offset_ = 0;
        if (!chunk_) {
          done_ = true;
          if (auto* err = duckdb_result_error(&result_))
            throw engine_error(classify(err, duckdb_result_error_type(&result_)),
                               err);
          return false;
        }
      }
      auto size = duckdb_data_chunk_get_size(chunk_);
      auto n = std::min<idx_t>(size - offset_, max_rows - taken);
      append(out, offset_, n);
      offset_ += n;
      taken += n;
    }
    return true;
  }

private:
  void append(row_batch& out, idx_t from, idx_t n) {
    auto base = out.cells.size();
    auto width = columns_.size();
    out.cells.resize(base + n * width);
    for (idx_t c = 0; c < width; ++c) {
      auto vec = duckdb_data_chunk_get_vector(chunk_, c);
      auto* data = duckdb_vector_get_data(vec);
      auto* validity = duckdb_vector_get_validity(vec);
      for (idx_t r = 0; r < n; ++r)
        if (!validity || duckdb_validity_row_is_valid(validity, from + r))
          out.cells[base + r * width + c] = read_cell(readers_[c], data,
                                                      from + r);
    }
  }

  duckdb_prepared_statement prepared_;
  duckdb_result result_;
  duckdb_data_chunk chunk_ = nullptr;
  idx_t offset_ = 0;
  bool done_ = false;
  std::vector<column_reader> readers_;
};

class duckdb_connection_impl : public connection {
public:
  /// keep_alive holds the database open while this connection lives.
  duckdb_connection_impl(duckdb_database db, interrupt_registry& registry,
                         std::shared_ptr<const void> keep_alive)
    : keep_alive_(std::move(keep_alive)), registry_(registry), db_(db) {
    connect();
  }

  ~duckdb_connection_impl() override {
    disconnect();
  }

  duckdb_connection_impl(const duckdb_connection_impl&) = delete;
  duckdb_connection_impl& operator=(const duckdb_connection_impl&) = delete;

  using connection::execute;

  std::unique_ptr<cursor> execute(const std::string& sql,
                                  const parameters& params) override {
    flag_->store(false);
    note_transaction(sql);
    duckdb_extracted_statements stmts = nullptr;
    auto count = duckdb_extract_statements(con_, sql.c_str(), &stmts);
    if (count == 0) {
      auto* err = duckdb_extract_statements_error(stmts);
      std::string msg = err ? err : "empty query";
      duckdb_destroy_extracted(&stmts);
      throw engine_error(error_kind::syntax, msg);
    }
    std::unique_ptr<cursor> last;
    try {
      for (idx_t i = 0; i < count; ++i)
        last = run(stmts, i, i + 1 == count ? params : parameters{});
    } catch (...) {
      duckdb_destroy_extracted(&stmts);
      throw;
    }
    duckdb_destroy_extracted(&stmts);
    return last;
  }

  void interrupt() override {
    flag_->store(true);
    std::lock_guard guard{con_mtx_};
    duckdb_interrupt(con_);
  }

  duckdb_connection raw() const {
    return con_;
  }

private:
  void connect() {
    duckdb_connection con = nullptr;
    if (duckdb_connect(db_, &con) != DuckDBSuccess)
      throw engine_error(error_kind::internal, "cannot connect to DuckDB");
    {
      std::lock_guard guard{con_mtx_};
      con_ = con;
    }
    id_ = connection_id(con_);
    std::lock_guard guard{registry_.mtx};
    registry_.flags[id_] = flag_;
  }

  void disconnect() {
    {
      std::lock_guard guard{registry_.mtx};
      registry_.flags.erase(id_);
    }
    std::lock_guard guard{con_mtx_};
    duckdb_disconnect(&con_);
  }

  /// Whether a transaction is open after the script: DuckDB's C API does
  /// not say, so it is read from the statements, as the wire sessions read
  /// them.
  void note_transaction(const std::string& script) {
    for (auto statement : sql::split_statements(script)) {
      auto kw = sql::leading_keyword(statement);
      if (kw == "BEGIN" || kw == "START")
        in_transaction_ = true;
      else if (kw == "COMMIT" || kw == "END" || kw == "ROLLBACK" || kw == "ABORT")
        in_transaction_ = false;
    }
  }

  bool in_transaction() const override {
    return in_transaction_;
  }

  void renew_session() override {
    disconnect();
    connect();
  }

  std::unique_ptr<cursor> run(duckdb_extracted_statements stmts, idx_t i,
                              const parameters& params) {
    duckdb_prepared_statement prepared = nullptr;
    if (duckdb_prepare_extracted_statement(con_, stmts, i, &prepared)
        != DuckDBSuccess) {
      std::string msg = duckdb_prepare_error(prepared);
      duckdb_destroy_prepare(&prepared);
      throw engine_error(classify(msg.c_str(), DUCKDB_ERROR_INVALID), msg);
    }
    try {
      bind_parameters(prepared, params);
    } catch (...) {
      duckdb_destroy_prepare(&prepared);
      throw;
    }
    duckdb_pending_result pending = nullptr;
    duckdb_result result{};
    if (duckdb_pending_prepared_streaming(prepared, &pending) != DuckDBSuccess) {
      std::string msg = duckdb_pending_error(pending);
      duckdb_destroy_pending(&pending);
      duckdb_destroy_prepare(&prepared);
      throw engine_error(error_kind::user, msg);
    }
    auto state = duckdb_execute_pending(pending, &result);
    duckdb_destroy_pending(&pending);
    if (state != DuckDBSuccess) {
      std::string msg = duckdb_result_error(&result) ? duckdb_result_error(&result)
                                                     : "query failed";
      auto kind = flag_->load() ? error_kind::cancelled
                                : classify(msg.c_str(),
                                           duckdb_result_error_type(&result));
      duckdb_destroy_result(&result);
      duckdb_destroy_prepare(&prepared);
      throw engine_error(kind, msg);
    }
    return std::make_unique<duckdb_cursor>(prepared, result);
  }

  std::shared_ptr<const void> keep_alive_;
  interrupt_registry& registry_;
  duckdb_database db_;
  std::mutex con_mtx_; // con_ against interrupt() from another thread
  duckdb_connection con_ = nullptr;
  idx_t id_ = 0;
  bool in_transaction_ = false; // see note_transaction()
  std::shared_ptr<std::atomic<bool>> flag_
    = std::make_shared<std::atomic<bool>>(false);
};

class duckdb_database_impl
  : public database,
    public std::enable_shared_from_this<duckdb_database_impl> {
public:
  explicit duckdb_database_impl(const config::cluster& cfg) {
    char* err = nullptr;
    auto path = cfg.database_path.empty() ? nullptr : cfg.database_path.c_str();
    if (duckdb_open_ext(path, &db_, nullptr, &err) != DuckDBSuccess) {
      std::string msg = err ? err : "cannot open DuckDB database";
      duckdb_free(err);
      throw engine_error(error_kind::internal, msg);
    }
    auto setup = duckdb_connection_impl{db_, registry_, nullptr};
    register_sleep(setup.raw(), &registry_);
    auto run = [&](const std::string& sql) {
      auto cur = setup.execute(sql);
      row_batch sink;
      while (cur->fetch(sink, 2048))
        sink.cells.clear();
    };
    for (const auto& sql : cfg.init_sql)
      run(sql);
    // The clients' SQL runs with the gateway's rights on its host:
    // read_csv('/etc/...'), COPY TO a path, ATTACH, INSTALL. DuckDB keeps
    // this off for good once it is off; initSql above ran before.
    if (!cfg.external_access)
      run("SET enable_external_access = false");
    // The engine is shared by every client of the cluster: one that set
    // memory_limit to 1MB or threads to 1 would fail or slow everyone's
    // queries. Its settings are initSql's.
    run("SET lock_configuration = true");
  }

  ~duckdb_database_impl() override {
    duckdb_close(&db_);
  }

  duckdb_database_impl(const duckdb_database_impl&) = delete;
  duckdb_database_impl& operator=(const duckdb_database_impl&) = delete;

  std::unique_ptr<connection> connect() override {
    return std::make_unique<duckdb_connection_impl>(db_, registry_,
                                                    shared_from_this());
  }

  std::string_view engine_type() const override {
    return "duckDb";
  }

private:
  interrupt_registry registry_;
  duckdb_database db_ = nullptr;
};

} // namespace

std::shared_ptr<database> open_duckdb(const config::cluster& cfg) {
  return std::make_shared<duckdb_database_impl>(cfg);
}

} // namespace qf::engines
