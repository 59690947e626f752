#include "tests/support/fleet.hpp"

#include "protocols/config/loader.hpp"

#include <cstdio>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace qf::test_support {

namespace {

std::string write_temp(const std::string& text) {
  auto dir = std::filesystem::temp_directory_path();
  char name[] = "/tmp/qf-fleet-XXXXXX";
  int fd = ::mkstemp(name);
  if (fd < 0)
    throw std::runtime_error("mkstemp");
  ::close(fd);
  std::ofstream{name} << text;
  return name;
}

std::string indent(const std::string& text, const std::string& prefix) {
  std::string out;
  size_t at = 0;
  while (at < text.size()) {
    auto eol = text.find('\n', at);
    auto line = text.substr(at, eol == std::string::npos ? std::string::npos : eol - at);
    if (!line.empty())
      out += prefix + line + "\n";
    if (eol == std::string::npos)
      break;
    at = eol + 1;
  }
  return out;
}

/// A port free on 127.0.0.1 below the ephemeral range, so that no proxy
/// (on port 0) takes it while a control plane restarts.
uint16_t free_port() {
  static uint16_t next = 28000 + static_cast<uint16_t>(::getpid() % 200);
  for (int tries = 0; tries < 500; ++tries) {
    auto port = next;
    next = next >= 28499 ? 28000 : next + 1;
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    bool free = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    ::close(fd);
    if (free)
      return port;
  }
  throw std::runtime_error("no free port in 28000-28499");
}

} // namespace

http_answer http_request(const std::string& method, const std::string& url,
                         engines::http_headers headers, std::string body) {
  auto parsed = engines::parse_http_url(url);
  if (!parsed)
    throw std::invalid_argument("not a URL: " + url);
  engines::http_client client{std::chrono::seconds(40)};
  try {
    auto r = client.send(method, *parsed, headers, std::move(body));
    return {r.status, std::move(r.body)};
  } catch (const std::exception& e) {
    return {0, e.what()};
  }
}

nlohmann::json trino_query(uint16_t port, const std::string& sql, const std::string& host) {
  engines::http_headers headers{{"X-Trino-User", "fleet"}};
  auto r = http_request("POST", "http://" + host + ":" + std::to_string(port) + "/v1/statement",
                        headers, sql);
  auto rows = nlohmann::json::array();
  for (int pages = 0; pages < 1000; ++pages) {
    auto page = r.json();
    if (!page.is_object())
      return "HTTP " + std::to_string(r.status) + ": " + r.body;
    if (page.contains("error"))
      return page["error"].value("message", "error");
    if (page.contains("data"))
      for (auto& row : page["data"])
        rows.push_back(row);
    if (!page.contains("nextUri"))
      return rows;
    r = http_request("GET", page["nextUri"].get<std::string>(), headers);
  }
  return "too many pages";
}

fleet::fleet(control_plane_options cp) : cp_(std::move(cp)) {
  cp_yaml_ = "queryflux:\n"
             "  frontends: { trinoHttp: { port: 1 } }\n"
             "  adminApi: { port: 2 }\n"
             "  workerApi: { enabled: true, sharedSecret: \""
             + std::string{fleet_secret} + "\""
             + (cp_.worker_api_yaml.empty() ? "" : ", " + cp_.worker_api_yaml) + " }\n";
  if (!cp_.database_url.empty())
    cp_yaml_ += "  role: controlPlane\n  persistence: { type: postgres, url: \""
                + cp_.database_url + "\" }\n  configReloadIntervalSecs: 0\n";
  cp_yaml_ += indent(cp_.node_yaml, "  ");
  cp_yaml_ += "monitor: { taskDelay: 1s }\n" + cp_.fleet_yaml;
  start_control_plane();
}

fleet::~fleet() {
  for (auto& w : workers_)
    if (w.node)
      w.node->stop();
  workers_.clear();
  if (control_plane_)
    control_plane_->stop();
}

void fleet::stop_control_plane() {
  if (control_plane_)
    control_plane_->stop();
  control_plane_.reset();
}

void fleet::start_control_plane() {
  auto yaml = cp_yaml_;
  // Ports: 1 in the file (0 is refused there); the node binds what the
  // struct says, and the admin port stays the same across restarts.
  auto path = write_temp(yaml);
  auto loaded = config::load_from_file(path);
  std::filesystem::remove(path);
  if (!loaded.config) {
    std::string all;
    for (const auto& p : loaded.problems)
      all += p + "\n";
    throw std::runtime_error("bad control plane config:\n" + all + yaml);
  }
  auto cfg = std::move(*loaded.config);
  if (startup::prepare_database(cfg.queryflux.persistence) != startup::database_state::ready)
    throw std::runtime_error("the test database is not ready");
  auto file = write_temp(yaml);
  auto served = startup::with_stored_fleet(file, std::move(cfg));
  std::filesystem::remove(file);
  if (!served)
    throw std::runtime_error("the stored fleet cannot be served");
  served->config.queryflux.trino_http.port = 0;
  if (cp_port_ == 0)
    cp_port_ = free_port();
  served->config.queryflux.admin.port = cp_port_;
  server_options opts;
  opts.address = "127.0.0.1";
  opts.actor_threads = 2;
  opts.http_threads = 2;
  opts.node.lease_grace = cp_.lease_grace;
  control_plane_ = std::make_unique<server>(std::move(*served), opts);
  cp_port_ = control_plane_->admin_port();
  for (auto& w : workers_)
    w.link->retarget(cp_port_);
}

std::unique_ptr<server> fleet::replica() const {
  auto path = write_temp(cp_yaml_);
  auto loaded = config::load_from_file(path);
  auto cfg = std::move(*loaded.config);
  auto served = startup::with_stored_fleet(path, std::move(cfg));
  std::filesystem::remove(path);
  served->config.queryflux.trino_http.port = 0;
  served->config.queryflux.admin.port = 0;
  server_options opts;
  opts.address = "127.0.0.1";
  opts.actor_threads = 2;
  opts.http_threads = 1;
  opts.node.lease_grace = cp_.lease_grace;
  return std::make_unique<server>(std::move(*served), opts);
}

size_t fleet::add_worker(worker_options opts) {
  worker_slot slot;
  slot.link = std::make_unique<link_proxy>(opts.control_plane_port ? opts.control_plane_port
                                                                    : cp_port_);
  auto yaml = "queryflux:\n"
              "  role: worker\n"
              "  workerName: " + opts.name + "\n"
              "  controlPlane:\n"
              "    url: http://127.0.0.1:" + std::to_string(slot.link->port()) + "\n"
              "    allowInsecureHttp: true\n"
              "    auth: { mode: sharedSecret, sharedSecret: \"" + fleet_secret + "\" }\n"
              "    pollTimeoutSecs: " + std::to_string(opts.poll_timeout_secs) + "\n"
              "    heartbeatIntervalSecs: " + std::to_string(opts.heartbeat_interval_secs) + "\n"
              + indent(opts.control_plane_yaml, "    ")
              + "  frontends:\n    trinoHttp: { port: 1 }\n"
              + (opts.postgres_wire ? "    postgresWire: { port: 2 }\n" : "")
              + (opts.mysql_wire ? "    mysqlWire: { port: 4 }\n" : "")
              + "  adminApi: { port: 3 }\n"
              + "  wireThreads: 1\n"
              + indent(opts.node_yaml, "  ");
  auto path = write_temp(yaml);
  auto loaded = config::load_from_file(path);
  if (!loaded.config) {
    std::string all;
    for (const auto& p : loaded.problems)
      all += p + "\n";
    throw std::runtime_error("bad worker config:\n" + all + yaml);
  }
  startup::served_config served;
  served.config = std::move(*loaded.config);
  served.file_text = yaml;
  std::filesystem::remove(path);
  served.config.queryflux.trino_http.port = 0;
  served.config.queryflux.postgres_wire.port = 0;
  served.config.queryflux.mysql_wire.port = 0;
  served.config.queryflux.admin.port = opts.ops_port;
  server_options so;
  so.address = opts.address;
  so.actor_threads = 2;
  so.http_threads = 1;
  so.worker_transport = opts.transport;
  slot.node = std::make_unique<server>(std::move(served), so);
  slot.opts = std::move(opts);
  workers_.push_back(std::move(slot));
  return workers_.size() - 1;
}

void fleet::kill_worker(size_t i) {
  auto& w = workers_.at(i);
  if (!w.node)
    return;
  // What a dead process sends is nothing: the link goes first, so that the
  // node's shutdown reaches no control plane.
  w.link->cut();
  w.node->stop();
  w.node.reset();
}

void fleet::stop_worker(size_t i) {
  auto& w = workers_.at(i);
  if (w.node)
    w.node->stop();
  w.node.reset();
}

http_answer fleet::admin(const std::string& method, const std::string& path, std::string body) {
  return http_request(method, "http://127.0.0.1:" + std::to_string(cp_port_) + path,
                      {{"Authorization", "Basic YWRtaW46YWRtaW4="},
                       {"Content-Type", "application/json"}},
                      std::move(body));
}

http_answer fleet::worker_api(const std::string& path, uint16_t admin_port) {
  auto port = admin_port ? admin_port : cp_port_;
  return http_request("GET", "http://127.0.0.1:" + std::to_string(port) + path,
                      {{"Authorization", std::string{"Bearer "} + fleet_secret}});
}

nlohmann::json fleet::status(size_t i) {
  const auto& w = workers_.at(i);
  if (!w.node)
    return nlohmann::json::object();
  auto address = w.opts.address;
  auto r = http_request("GET", "http://" + address + ":"
                                 + std::to_string(w.node->admin_port()) + "/worker/status");
  auto j = r.json();
  return j.is_discarded() ? nlohmann::json::object() : j;
}

std::string fleet::served_revision(uint16_t admin_port) {
  auto j = worker_api("/worker/config", admin_port).json();
  return j.is_object() && j.contains("revision") ? j["revision"].get<std::string>() : "";
}

} // namespace qf::test_support
