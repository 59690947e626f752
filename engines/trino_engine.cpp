#include "engines/trino_engine.hpp"

#include "engines/http_client.hpp"
#include "protocols/common/json_depth.hpp"
#include "protocols/common/json_writer.hpp"
#include "protocols/sql/placeholders.hpp"
#include "protocols/sql/statements.hpp"
#include "protocols/trino/backend_results.hpp"
#include "protocols/trino/monitor_documents.hpp"

#include <nlohmann/json.hpp>

#include <atomic>
#include <cctype>
#include <charconv>
#include <sstream>
#include <thread>

namespace qf::engines {

namespace {

using namespace std::chrono_literals;

engine_error failure_of(const trino::backend_error& e) {
  auto kind = e.error_name == "SYNTAX_ERROR"    ? error_kind::syntax
              : e.error_name == "USER_CANCELED" ? error_kind::cancelled
              : e.error_type == "USER_ERROR"    ? error_kind::user
                                                : error_kind::internal;
  return engine_error(kind, e.message);
}

/// Trino asks clients to retry these (a coordinator busy or restarting).
bool retryable(int status) {
  return status == 502 || status == 503 || status == 504;
}

class trino_connection;

class trino_cursor : public cursor {
public:
  trino_cursor(trino_connection& conn, trino::backend_page first) : conn_(conn) {
    absorb(std::move(first));
  }

  ~trino_cursor() override;

  /// Follows nextUri until the cluster names the columns (or is done).
  void await_columns();

  bool fetch(row_batch& out, size_t max_rows) override;

private:
  void absorb(trino::backend_page page);

  trino_connection& conn_;
  bool columns_known_ = false;
  std::string next_uri_;
  row_batch pending_;
  size_t taken_ = 0; // rows of pending_ already handed out
};

class trino_connection : public connection {
public:
  /// `service_user`: who queries run as, or "" for the client's name.
  trino_connection(http_url base, std::string authorization, std::string service_user,
                   const tls_trust& trust)
    : base_(std::move(base)),
      authorization_(std::move(authorization)),
      service_user_(std::move(service_user)),
      // A Trino poll may wait up to a few seconds on the server's side.
      client_(std::chrono::seconds(120), trust) {
    // nop
  }

  std::unique_ptr<cursor> execute(const std::string& sql, const parameters& params) override {
    cancelled_ = false;
    auto statement = base_;
    statement.target = "/v1/statement";
    auto res = send("POST", statement, params.empty() ? sql : with_literals(sql, params));
    auto cur = std::make_unique<trino_cursor>(*this, parse(res.body, nullptr));
    cur->await_columns();
    return cur;
  }

  void interrupt() override {
    cancelled_ = true;
    client_.interrupt();
  }

  void set_session(const session_context& session) override {
    session_ = session;
  }

  void probe(const std::string&) override {
    info(max_retries);
  }

  std::optional<uint32_t> running_count() override {
    auto l = load(max_retries);
    return l ? std::optional<uint32_t>{l->total()} : std::nullopt;
  }

  std::optional<engine_load> check(const config::health_probe& how, const std::string&,
                                   bool count) override {
    auto retries = static_cast<int>(how.retries);
    switch (how.type) {
      case config::monitor_type::noop:
        return std::nullopt;
      case config::monitor_type::info_api:
        info(retries);
        return count ? load(retries) : std::nullopt;
      case config::monitor_type::jdbc:
        return runtime_queries();
      case config::monitor_type::jmx:
        return jmx(retries);
      case config::monitor_type::metrics:
        return metrics(how);
    }
    return std::nullopt;
  }

  /// GET /v1/info: a coordinator that answers and is not starting.
  void info(int retries) {
    auto doc = json_of(get("/v1/info", retries).body, 16);
    if (!doc.is_object())
      throw engine_error(error_kind::internal, "/v1/info: not a server info document");
    if (auto starting = doc.find("starting");
        starting != doc.end() && starting->is_boolean() && starting->get<bool>())
      throw engine_error(error_kind::internal, "the Trino cluster is still starting");
  }

  /// Queries the cluster runs or queues, from GET /v1/query; nullopt when
  /// it does not say (an older cluster, or credentials without the right).
  std::optional<engine_load> load(int retries) {
    try {
      auto doc = json_of(get("/v1/query", retries).body, 32);
      if (!doc.is_array())
        return std::nullopt;
      engine_load out;
      for (const auto& q : doc) {
        if (!q.is_object() || !q.contains("state") || !q["state"].is_string())
          continue;
        const auto& state = q["state"].get_ref<const std::string&>();
        if (state == "FINISHED" || state == "FAILED")
          continue;
        if (state != "QUEUED" && state != "WAITING_FOR_RESOURCES") {
          ++out.running;
          continue;
        }
        ++out.queued;
        auto session = q.find("session");
        if (session != q.end() && session->is_object() && session->contains("user")
            && (*session)["user"].is_string())
          ++out.user_queued[(*session)["user"].get<std::string>()];
      }
      return out;
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }

  /// JDBC: the cluster's own account of its queries, over its statement
  /// protocol (Trino Gateway reads system.runtime.queries the same way).
  engine_load runtime_queries() {
    auto cur = execute("SELECT state, \"user\", count(*) FROM system.runtime.queries "
                       "WHERE state IN ('QUEUED', 'RUNNING') GROUP BY 1, 2",
                       {});
    engine_load out;
    auto own = user_name();
    bool self_seen = false;
    row_batch rows;
    for (bool more = true; more;) {
      rows.cells.clear(); // a batch at a time: a busy cluster has many users
      more = cur->fetch(rows, 1024);
      for (size_t r = 0; r < rows.rows(); ++r) {
        if (!rows.at(r, 0) || !rows.at(r, 1) || !rows.at(r, 2))
          continue;
        uint32_t n = 0;
        const auto& text = *rows.at(r, 2);
        std::from_chars(text.data(), text.data() + text.size(), n);
        if (*rows.at(r, 0) == "QUEUED") {
          out.queued += n;
          out.user_queued[*rows.at(r, 1)] += n;
          continue;
        }
        // This very query runs too: not the cluster's load.
        if (!self_seen && n > 0 && *rows.at(r, 1) == own) {
          self_seen = true;
          --n;
        }
        out.running += n;
      }
    }
    return out;
  }

  /// JMX: healthy with an active node; the QueryManager's counts.
  engine_load jmx(int retries) {
    auto nodes = mbean("trino.metadata:name=DiscoveryNodeManager", retries);
    auto active = nodes.find("ActiveNodeCount");
    if (active == nodes.end() || !(active->second > 0))
      throw engine_error(error_kind::internal, "JMX: the Trino cluster has no active node");
    auto queries = mbean("trino.execution:name=QueryManager", retries);
    return engine_load{count_in(queries, "RunningQueries"), count_in(queries, "QueuedQueries"), {}};
  }

  /// METRICS: every bounded metric within its bounds; the counts from
  /// the metrics the probe names.
  engine_load metrics(const config::health_probe& how) {
    std::string target = how.metrics_endpoint;
    char sep = target.find('?') == std::string::npos ? '?' : '&';
    auto ask_for = [&](const std::string& name) {
      target += sep;
      target += "name%5B%5D=" + url_encoded(name);
      sep = '&';
    };
    for (const auto& [name, bound] : how.metric_minimum_values)
      ask_for(name);
    for (const auto& [name, bound] : how.metric_maximum_values)
      ask_for(name);
    ask_for(how.running_queries_metric_name);
    ask_for(how.queued_queries_metric_name);
    auto values = trino::parse_prometheus_text(get(target, static_cast<int>(how.retries)).body);
    auto value_of = [&](const std::string& name) -> double {
      auto v = values.find(name);
      if (v == values.end())
        throw engine_error(error_kind::internal, "METRICS: " + how.metrics_endpoint
                                                   + " has no metric " + name);
      return v->second;
    };
    for (const auto& [name, min] : how.metric_minimum_values)
      if (auto v = value_of(name); !(v >= min))
        throw engine_error(error_kind::internal, "METRICS: " + name + " is " + number(v)
                                                   + ", below its minimum " + number(min));
    for (const auto& [name, max] : how.metric_maximum_values)
      if (auto v = value_of(name); !(v <= max))
        throw engine_error(error_kind::internal, "METRICS: " + name + " is " + number(v)
                                                   + ", above its maximum " + number(max));
    return engine_load{count_in(values, how.running_queries_metric_name),
                       count_in(values, how.queued_queries_metric_name), {}};
  }

  /// One nextUri page; `columns` are those known so far.
  trino::backend_page follow(const std::string& uri, const std::vector<column>* columns) {
    auto url = on_endpoint(uri);
    if (!url)
      throw engine_error(error_kind::internal, "the Trino cluster sent a nextUri QueryFlux "
                                               "cannot follow: " + uri);
    return parse(send("GET", *url, {}).body, columns);
  }

  /// Cancels the query upstream; best effort, it may have ended anyway.
  void cancel_upstream(const std::string& uri) noexcept {
    try {
      if (auto url = on_endpoint(uri))
        client_.send("DELETE", *url, headers());
    } catch (...) {
      // the cluster forgets an abandoned query on its own
    }
  }

  bool cancelled() const {
    return cancelled_.load();
  }

private:
  /// A long poll may wait a few seconds; a health check should not.
  static constexpr std::chrono::milliseconds probe_timeout{10'000};
  /// Tries again of a statement's requests on 502, 503, 504 (a
  /// coordinator busy or restarting), with a growing pause.
  static constexpr int max_retries = 20;

  /// The path of a nextUri on the configured endpoint: credentials never
  /// go to a host or scheme the cluster names (its advertised address may
  /// be plain http behind TLS, or anywhere).
  std::optional<http_url> on_endpoint(const std::string& uri) const {
    auto url = parse_http_url(uri);
    if (!url)
      return std::nullopt;
    auto out = base_;
    out.target = url->target;
    return out;
  }

  /// A header value without control characters: a client's user name
  /// must not add headers (or requests) of its own.
  static std::string header_safe(std::string_view v) {
    std::string out;
    out.reserve(v.size());
    for (unsigned char c : v)
      if (c >= 0x20 && c != 0x7f)
        out += static_cast<char>(c);
    return out;
  }

  /// Who the next request runs as.
  std::string user_name() const {
    return header_safe(!service_user_.empty() ? service_user_
                       : !session_.user.empty() ? session_.user
                                                : std::string{"queryflux"});
  }

  http_headers headers() const {
    http_headers h;
    h.emplace_back("X-Trino-User", user_name());
    for (const auto& [name, value] : session_.headers)
      h.emplace_back(header_safe(name), header_safe(value));
    if (!authorization_.empty())
      h.emplace_back("Authorization", authorization_);
    return h;
  }

  /// A GET of the probes: at most `retries` more tries on 502, 503, 504.
  http_response get(const std::string& target, int retries) {
    auto url = base_;
    url.target = target;
    return send("GET", url, {}, probe_timeout, retries);
  }

  std::map<std::string, double> mbean(const std::string& name, int retries) {
    auto doc = trino::parse_jmx_attributes(get("/v1/jmx/mbean/" + name, retries).body);
    if (!doc)
      throw engine_error(error_kind::internal, "JMX: /v1/jmx/mbean/" + name
                                                 + " is not an MBean document");
    return std::move(*doc);
  }

  /// A count among numbers read; 0 when absent, negative or not finite.
  static uint32_t count_in(const std::map<std::string, double>& values, const std::string& name) {
    auto v = values.find(name);
    if (v == values.end() || !(v->second >= 0) || !(v->second < 4e9))
      return 0;
    return static_cast<uint32_t>(v->second);
  }

  static std::string number(double v) {
    std::ostringstream out;
    out << v;
    return out.str();
  }

  static std::string url_encoded(std::string_view s) {
    static constexpr char hex[] = "0123456789ABCDEF";
    std::string out;
    for (unsigned char c : s) {
      if (std::isalnum(c) || c == '_' || c == '-' || c == '.' || c == '~' || c == ':') {
        out += static_cast<char>(c);
      } else {
        out += '%';
        out += hex[c >> 4];
        out += hex[c & 0xF];
      }
    }
    return out;
  }

  http_response send(std::string_view method, const http_url& url, std::string body,
                     std::optional<std::chrono::milliseconds> timeout = std::nullopt,
                     int retries = max_retries) {
    for (int attempt = 0;; ++attempt) {
      http_response res;
      try {
        res = client_.send(method, url, headers(), body, timeout);
      } catch (const std::exception& e) {
        if (cancelled_)
          throw engine_error(error_kind::cancelled, "Query was canceled");
        throw engine_error(error_kind::internal,
                           std::string{"the Trino cluster cannot be reached: "} + e.what());
      }
      if (res.status == 200 || res.status == 204)
        return res;
      if (retryable(res.status) && attempt < retries && !cancelled_) {
        std::this_thread::sleep_for(std::min(50ms * (attempt + 1), 500ms));
        continue;
      }
      if (res.status == 401 || res.status == 403)
        throw engine_error(error_kind::user, "the Trino cluster refused QueryFlux's credentials (HTTP "
                                               + std::to_string(res.status) + ")");
      // A Trino error document comes with some failures; use its message.
      try {
        if (auto page = parse(res.body, nullptr); page.error)
          throw failure_of(*page.error);
      } catch (const engine_error&) {
        throw;
      } catch (...) {
        // not a QueryResults document
      }
      throw engine_error(error_kind::internal, std::string{method} + " " + url.target
                                                 + ": the Trino cluster answered HTTP "
                                                 + std::to_string(res.status));
    }
  }

  static nlohmann::json json_of(const std::string& body, int max_depth) {
    if (!json_text::nests_within(body, max_depth))
      return nullptr;
    return nlohmann::json::parse(body, nullptr, false);
  }

  static trino::backend_page parse(const std::string& body, const std::vector<column>* columns) {
    try {
      return trino::parse_backend_page(body, columns);
    } catch (const std::invalid_argument& e) {
      throw engine_error(error_kind::internal,
                         std::string{"the Trino cluster sent a response QueryFlux cannot read: "}
                           + e.what());
    }
  }

  std::string with_literals(const std::string& sql, const parameters& params) {
    return sql::replace_placeholders(sql, sql::placeholder_style::dollar,
                                     [&](size_t n) -> std::string {
                                       if (n == 0 || n > params.size())
                                         throw engine_error(error_kind::user,
                                                            "there is no parameter $"
                                                              + std::to_string(n));
                                       const auto& value = params[n - 1];
                                       if (!value)
                                         return "NULL";
                                       return sql::is_plain_integer(*value) ? *value
                                                                            : sql::quoted(*value);
                                     });
  }

  http_url base_;
  std::string authorization_;
  std::string service_user_;
  session_context session_;
  http_client client_;
  std::atomic<bool> cancelled_{false};
};

trino_cursor::~trino_cursor() {
  if (!next_uri_.empty()) // abandoned before the end: free the cluster
    conn_.cancel_upstream(next_uri_);
}

void trino_cursor::absorb(trino::backend_page page) {
  if (backend_id_.empty() && !page.id.empty())
    backend_id_ = page.id;
  next_uri_ = std::move(page.next_uri);
  if (page.error) {
    next_uri_.clear(); // a failed query has nothing left upstream
    throw failure_of(*page.error);
  }
  if (page.columns && !columns_known_) {
    columns_ = std::move(*page.columns);
    columns_known_ = true;
  }
  if (page.update_count >= 0)
    affected_ = page.update_count;
  if (page.rows.rows() > 0) {
    if (taken_ > 0) { // drop what was handed out before appending
      pending_.cells.erase(pending_.cells.begin(),
                           pending_.cells.begin()
                             + static_cast<std::ptrdiff_t>(taken_ * pending_.width));
      taken_ = 0;
    }
    pending_.width = page.rows.width;
    pending_.cells.insert(pending_.cells.end(), std::make_move_iterator(page.rows.cells.begin()),
                          std::make_move_iterator(page.rows.cells.end()));
  }
}

void trino_cursor::await_columns() {
  while (!columns_known_ && !next_uri_.empty()) {
    if (conn_.cancelled())
      break;
    absorb(conn_.follow(next_uri_, nullptr));
  }
  if (conn_.cancelled()) {
    conn_.cancel_upstream(next_uri_);
    next_uri_.clear();
    throw engine_error(error_kind::cancelled, "Query was canceled");
  }
}

bool trino_cursor::fetch(row_batch& out, size_t max_rows) {
  out.width = columns_.size();
  for (;;) {
    if (conn_.cancelled()) {
      conn_.cancel_upstream(next_uri_);
      next_uri_.clear();
      throw engine_error(error_kind::cancelled, "Query was canceled");
    }
    size_t available = pending_.rows() - taken_;
    size_t n = std::min(available, max_rows - out.rows());
    if (n > 0) {
      auto first = pending_.cells.begin() + static_cast<std::ptrdiff_t>(taken_ * pending_.width);
      out.cells.insert(out.cells.end(), std::make_move_iterator(first),
                       std::make_move_iterator(first
                                               + static_cast<std::ptrdiff_t>(n * pending_.width)));
      taken_ += n;
    }
    if (out.width == 0 || out.rows() >= max_rows || next_uri_.empty())
      break;
    absorb(conn_.follow(next_uri_, &columns_));
  }
  if (out.width == 0) // no columns: nothing to stream, but follow to the end
    while (!next_uri_.empty())
      absorb(conn_.follow(next_uri_, &columns_));
  return taken_ < pending_.rows() || !next_uri_.empty();
}

class trino_database : public database {
public:
  explicit trino_database(const config::cluster& cfg) {
    auto url = parse_http_url(cfg.endpoint);
    if (!url)
      throw engine_error(error_kind::internal, "a Trino endpoint must be an http(s):// URL");
    base_ = *url;
    trust_.ca_file = cfg.tls_ca_file;
    trust_.insecure_skip_verify = cfg.tls_insecure_skip_verify;
    if (cfg.auth.type == "basic")
      authorization_ = "Basic " + json_text::base64_encode(cfg.auth.username + ":"
                                                           + cfg.auth.password);
    else if (cfg.auth.type == "bearer")
      authorization_ = "Bearer " + cfg.auth.token;
    if (cfg.query_auth == "serviceAccount")
      service_user_ = cfg.auth.username;
  }

  std::unique_ptr<connection> connect() override {
    return std::make_unique<trino_connection>(base_, authorization_, service_user_, trust_);
  }

  std::string_view engine_type() const override {
    return "trino";
  }

private:
  http_url base_;
  std::string authorization_;
  std::string service_user_;
  tls_trust trust_;
};

} // namespace

std::shared_ptr<database> open_trino(const config::cluster& cfg) {
  return std::make_shared<trino_database>(cfg);
}

} // namespace qf::engines
