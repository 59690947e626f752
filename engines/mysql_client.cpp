#include "engines/mysql_client.hpp"

#include "protocols/sql/placeholders.hpp"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <vector>

namespace qf::engines {

namespace {

constexpr unsigned binary_charset = 63;

error_kind classify(unsigned code) {
  switch (code) {
    case 1317: // ER_QUERY_INTERRUPTED
    case 1927: // ER_CONNECTION_KILLED
      return error_kind::cancelled;
    case 1064: // ER_PARSE_ERROR
    case 1065: // ER_EMPTY_QUERY
      return error_kind::syntax;
    default:
      // 2xxx are the client library's own: the connection is gone.
      return code >= 2000 && code < 3000 ? error_kind::internal : error_kind::user;
  }
}

} // namespace

bool mysql_skip_further_results(MYSQL* conn) {
  while (mysql_more_results(conn)) {
    if (mysql_next_result(conn) > 0)
      return false;
    if (auto* res = mysql_use_result(conn)) {
      while (mysql_fetch_row(res)) {
      }
      mysql_free_result(res);
    }
  }
  return true;
}

sql_type mysql_column_type(const MYSQL_FIELD& f) {
  bool is_unsigned = (f.flags & UNSIGNED_FLAG) != 0;
  auto fraction = static_cast<uint8_t>(f.decimals <= 6 ? f.decimals : 0);
  switch (f.type) {
    case MYSQL_TYPE_TINY:
      return {is_unsigned ? type_id::smallint : type_id::tinyint};
    case MYSQL_TYPE_SHORT:
    case MYSQL_TYPE_YEAR:
      return {is_unsigned ? type_id::integer : type_id::smallint};
    case MYSQL_TYPE_INT24:
      return {type_id::integer};
    case MYSQL_TYPE_LONG:
      return {is_unsigned ? type_id::bigint : type_id::integer};
    case MYSQL_TYPE_LONGLONG:
      return is_unsigned ? sql_type{type_id::decimal, 20, 0}
                         : sql_type{type_id::bigint};
    case MYSQL_TYPE_FLOAT:
      return {type_id::real};
    case MYSQL_TYPE_DOUBLE:
      return {type_id::double_precision};
    case MYSQL_TYPE_DECIMAL:
    case MYSQL_TYPE_NEWDECIMAL: {
      // length counts the digits plus a sign and a point.
      auto digits = f.length - (f.decimals > 0 ? 1 : 0) - (is_unsigned ? 0 : 1);
      return {type_id::decimal, static_cast<uint8_t>(digits > 0 && digits <= 65 ? digits : 65),
              static_cast<uint8_t>(f.decimals <= 38 ? f.decimals : 0)};
    }
    case MYSQL_TYPE_DATE:
    case MYSQL_TYPE_NEWDATE:
      return {type_id::date};
    case MYSQL_TYPE_TIME:
      return {type_id::time, fraction};
    case MYSQL_TYPE_DATETIME:
      return {type_id::timestamp, fraction};
    case MYSQL_TYPE_TIMESTAMP:
      return {type_id::timestamp_tz, fraction};
    case MYSQL_TYPE_JSON:
      return {type_id::json};
    case MYSQL_TYPE_BIT:
    case MYSQL_TYPE_GEOMETRY:
      return {type_id::varbinary};
    case MYSQL_TYPE_NULL:
      return {type_id::unknown};
    default:
      // CHAR, VARCHAR, TEXT, BLOB, ENUM, SET: bytes when the charset is binary.
      return {f.charsetnr == binary_charset ? type_id::varbinary : type_id::varchar};
  }
}

MYSQL* mysql_handle(bool nonblocking, unsigned connect_timeout_s) {
  // mysql_init would set the library up itself, but not safely from two
  // threads at once: the actors' and the wire thread's.
  static std::once_flag library_ready;
  std::call_once(library_ready, [] { mysql_library_init(0, nullptr, nullptr); });
  auto* conn = mysql_init(nullptr);
  if (!conn)
    return nullptr;
  mysql_optionsv(conn, MYSQL_OPT_CONNECT_TIMEOUT, &connect_timeout_s);
  mysql_optionsv(conn, MYSQL_SET_CHARSET_NAME, "utf8mb4");
  // Engine connections read TIMESTAMPs as UTC for every frontend; a MySQL
  // client's (the fast lane's, non-blocking) keep the server's own zone,
  // as it would directly.
  if (!nonblocking)
    mysql_optionsv(conn, MYSQL_INIT_COMMAND, "SET time_zone = '+00:00'");
  // LOAD DATA LOCAL INFILE has the server ask its client for a file, and
  // the client here is the gateway: any SQL client could read the gateway
  // host's files (its config, its secrets) into a table. The server
  // refuses the statement instead.
  unsigned int no_local_files = 0;
  mysql_optionsv(conn, MYSQL_OPT_LOCAL_INFILE, &no_local_files);
  if (nonblocking)
    mysql_optionsv(conn, MYSQL_OPT_NONBLOCK, 0);
  return conn;
}

MYSQL* mysql_connect_blocking(const mysql_target& t, std::string& why) {
  auto* conn = mysql_handle(false, t.connect_timeout_s);
  if (!conn) {
    why = "out of memory";
    return nullptr;
  }
  if (!mysql_real_connect(conn, t.host.c_str(), t.user.c_str(), t.password.c_str(),
                          t.database.empty() ? nullptr : t.database.c_str(), t.port,
                          nullptr, 0)) {
    why = mysql_error(conn);
    mysql_close(conn);
    return nullptr;
  }
  return conn;
}

void mysql_kill_query(const mysql_target& t, unsigned long thread_id) {
  std::string why;
  auto* killer = mysql_connect_blocking(t, why);
  if (!killer)
    return;
  auto kill = "KILL QUERY " + std::to_string(thread_id);
  mysql_real_query(killer, kill.data(), kill.size());
  mysql_close(killer);
}

engine_error mysql_failure(MYSQL* conn) {
  auto code = mysql_errno(conn);
  return engine_error(classify(code), mysql_error(conn), mysql_sqlstate(conn),
                      static_cast<int32_t>(code));
}

namespace {

/// A number as MySQL reads one: [-]digits[.digits][e[-]digits].
bool is_number(std::string_view v) {
  size_t i = !v.empty() && (v[0] == '-' || v[0] == '+') ? 1 : 0;
  size_t digits = 0;
  auto run = [&] {
    size_t n = 0;
    for (; i < v.size() && v[i] >= '0' && v[i] <= '9'; ++i, ++n) {
    }
    return n;
  };
  digits += run();
  if (i < v.size() && v[i] == '.') {
    ++i;
    digits += run();
  }
  if (digits == 0)
    return false;
  if (i < v.size() && (v[i] == 'e' || v[i] == 'E')) {
    ++i;
    if (i < v.size() && (v[i] == '-' || v[i] == '+'))
      ++i;
    if (run() == 0)
      return false;
  }
  return i == v.size();
}

/// A number rounded to an integer, half away from zero, as a LIMIT reads it.
std::string rounded(std::string_view number) {
  double v = std::strtod(std::string{number}.c_str(), nullptr);
  return std::to_string(static_cast<long long>(std::llround(v)));
}

} // namespace

std::string mysql_with_literals(MYSQL* conn, const std::string& sql, const parameters& params,
                                const std::vector<sql::literal_kind>& kinds) {
  auto in_limit = kinds.empty() ? std::vector<bool>{} : sql::limit_placeholders(sql);
  return sql::replace_placeholders(sql, sql::placeholder_style::dollar, [&](size_t n) -> std::string {
    if (n == 0 || n > params.size())
      throw engine_error(error_kind::user, "there is no parameter $" + std::to_string(n), "42P02");
    const auto& value = params[n - 1];
    if (!value)
      return "NULL";
    using sql::literal_kind;
    auto kind = n <= kinds.size() ? kinds[n - 1] : literal_kind::unknown;
    if (n <= in_limit.size() && in_limit[n - 1] && is_number(*value))
      return rounded(*value);
    if (kind == literal_kind::integer || kind == literal_kind::real) {
      if (!is_number(*value)) // a double's NaN or infinity
        return "NULL";
      bool exponent = value->find_first_of("eE") != std::string::npos;
      return kind == literal_kind::real && !exponent ? *value + "e0" : *value;
    }
    if (kind == literal_kind::unknown && sql::is_plain_integer(*value))
      return *value;
    if (value->starts_with("0000-00-00")) // no typed literal takes MySQL's zero date
      kind = literal_kind::text;
    std::string out = kind == literal_kind::bytes      ? "_binary'"
                      : kind == literal_kind::date     ? "DATE'"
                      : kind == literal_kind::datetime ? "TIMESTAMP'"
                      : kind == literal_kind::time     ? "TIME'"
                                                       : "'";
    auto start = out.size();
    out.resize(start + value->size() * 2 + 1);
    auto len = mysql_real_escape_string(conn, out.data() + start, value->data(), value->size());
    out.resize(start + len);
    return out + '\'';
  });
}

} // namespace qf::engines
