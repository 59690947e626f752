// Command parsing, and `serve`: start the node and its listeners, wait for
// SIGTERM/SIGINT, drain, exit 0.
#include "net/cli.hpp"

#include "actors/control/migrator.hpp"
#include "net/boundary/routes.hpp"
#include "net/http/server.hpp"
#include "net/logging.hpp"
#include "net/server.hpp"
#include "net/startup_database.hpp"
#include "protocols/config/loader.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <csignal>
#include <iostream>
#include <optional>
#include <thread>

namespace qf::cli {

namespace {

constexpr const char* usage = R"(QueryFlux: one SQL front door for many engines.

Usage:
  queryflux serve --config FILE [--log-level LEVEL] [--log-format text|json]
  queryflux validate --config FILE
  queryflux migrate --config FILE
  queryflux version
  queryflux --help

  serve     runs the gateway until SIGTERM or SIGINT, then drains
  validate  checks a config file and lists every problem with its path
  migrate   brings persistence.url's database to this version's schema
  version   prints the version

Options:
  -c, --config FILE     the YAML config (required for serve and validate)
  --log-level LEVEL     trace, debug, info (default), warn, error, off
  --log-format FORMAT   text (default) or json lines
)";

struct options {
  std::string command;
  std::string config_path;
  std::string log_level = "info";
  std::string log_format = "text";
};

/// Returns an error message, or "" when argv parsed.
std::string parse(int argc, char** argv, options& out) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](std::string& dest) {
      if (auto eq = arg.find('='); eq != std::string::npos) {
        dest = arg.substr(eq + 1);
        return true;
      }
      if (i + 1 >= argc)
        return false;
      dest = argv[++i];
      return true;
    };
    auto is = [&](std::string_view name) {
      return arg == name || arg.rfind(std::string{name} + "=", 0) == 0;
    };
    if (arg == "--help" || arg == "-h") {
      out.command = "help";
      return "";
    }
    if (is("--config") || arg == "-c") {
      if (!value(out.config_path))
        return "--config needs a file";
    } else if (is("--log-level")) {
      if (!value(out.log_level))
        return "--log-level needs a level";
    } else if (is("--log-format")) {
      if (!value(out.log_format))
        return "--log-format needs text or json";
    } else if (!arg.empty() && arg[0] != '-' && out.command.empty()) {
      out.command = arg;
    } else {
      return "unknown argument: " + arg;
    }
  }
  if (out.command.empty())
    out.command = out.config_path.empty() ? "help" : "serve";
  return "";
}

std::optional<config::gateway_config> load(const std::string& path) {
  if (path.empty()) {
    std::cerr << "queryflux: --config is required\n";
    return std::nullopt;
  }
  auto result = config::load_from_file(path);
  for (const auto& p : result.problems)
    std::cerr << path << ": " << p << "\n";
  return result.config;
}

int validate(const options& opts) {
  auto cfg = load(opts.config_path);
  if (!cfg)
    return 2;
  if (cfg->queryflux.role == config::node_role::worker) {
    std::cout << opts.config_path << ": OK (worker; its config comes from "
              << cfg->queryflux.control_plane.url << ")\n";
    return 0;
  }
  std::cout << opts.config_path << ": OK (" << cfg->clusters.size()
            << " clusters, " << cfg->groups.size() << " cluster groups, "
            << cfg->routers.size() << " routers)\n";
  return 0;
}

/// queryflux migrate: the maintenance-window way to upgrade the schema.
int migrate(const options& opts) {
  auto cfg = load(opts.config_path);
  if (!cfg)
    return 2;
  const auto& p = cfg->queryflux.persistence;
  if (p.type != "postgres") {
    std::cerr << opts.config_path << ": persistence.type is " << p.type
              << ": there is no database to migrate\n";
    return 2;
  }
  try {
    auto r = migrator::migrate(p.url);
    for (auto v : r.applied)
      std::cout << "applied V" << v << "\n";
    std::cout << "database at V" << r.version
              << (r.applied.empty() ? ", nothing to apply\n" : "\n");
    return 0;
  } catch (const migrator::migration_error& e) {
    std::cerr << "queryflux migrate: " << e.what() << "\n";
    return 1;
  }
}

/// Until the database answers, the admin port (and the Trino port) say
/// the process lives (/health, /trino-gateway/livez 200) but is not ready
/// (/readyz, /trino-gateway/readyz 503), so orchestrators wait instead of
/// restarting it. False when a signal asked to stop meanwhile.
bool wait_for_database(const config::node& q, const sigset_t& signals,
                       startup::database_state& state) {
  std::optional<http::service> waiting;
  for (int attempt = 0; state == startup::database_state::unreachable; ++attempt) {
    if (!waiting) {
      waiting.emplace();
      auto routes = boundary::make_waiting_routes("waiting for the database");
      waiting->listen({"adminApi", "0.0.0.0", q.admin.port, 100, 64 * 1024, q.admin.tls_cert_file,
                       q.admin.tls_key_file},
                      routes);
      // Trino Gateway's users probe its one port, the Trino port.
      if (q.trino_http.enabled)
        waiting->listen({"trinoHttp", "0.0.0.0", q.trino_http.port, 100, 64 * 1024, "", ""},
                        routes);
      waiting->start(1);
    }
    timespec pause{std::min(1L << std::min(attempt, 3), 5L), 0}; // 1, 2, 4, 5, 5 s
    if (sigtimedwait(&signals, nullptr, &pause) > 0)
      return false;
    state = startup::prepare_database(q.persistence);
  }
  return true;
}

int serve(const options& opts) {
  auto cfg = load(opts.config_path);
  if (!cfg)
    return 2;
  // Signals go to sigwait below, not to whichever thread they hit.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  auto db = startup::prepare_database(cfg->queryflux.persistence);
  if (!wait_for_database(cfg->queryflux, signals, db))
    return 0; // asked to stop while waiting
  if (db == startup::database_state::refused)
    return 1;
  auto served = startup::with_stored_fleet(opts.config_path, std::move(*cfg));
  if (!served)
    return 1;
  cfg = served->config;

  int exit_code = 0;
  try {
    server node{std::move(*served)};
    const auto& c = node.services()->snapshot->load();
    if (cfg->queryflux.role == config::node_role::worker)
      spdlog::info("QueryFlux {} worker {} serving; its config comes from {}", QF_VERSION,
                   node.services()->worker_name, cfg->queryflux.control_plane.url);
    else
      spdlog::info("QueryFlux {} serving ({} clusters, {} cluster groups)", QF_VERSION,
                   c ? c->config->clusters.size() : 0, c ? c->config->groups.size() : 0);
    int sig = 0;
    sigwait(&signals, &sig);
    spdlog::info("received signal {}: draining for up to {}s", sig,
                 cfg->queryflux.shutdown_drain_timeout.count());
    node.drain();
    // A statement stuck in an engine keeps its thread, and stopping waits
    // for every actor: do not let that hold the process forever. Stopping
    // first writes the last history records (up to 5 s), then waits.
    std::thread([] {
      std::this_thread::sleep_for(std::chrono::seconds(12));
      spdlog::warn("engine calls still blocked 12 s into the shutdown; exiting");
      spdlog::default_logger()->flush();
      std::_Exit(0);
    }).detach();
    node.stop();
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    exit_code = 1;
  }
  spdlog::info("stopped");
  return exit_code;
}

} // namespace

int run(int argc, char** argv) {
  options opts;
  if (auto err = parse(argc, argv, opts); !err.empty()) {
    std::cerr << "queryflux: " << err << "\n\n" << usage;
    return 2;
  }
  if (opts.command == "help") {
    std::cout << usage;
    return 0;
  }
  if (opts.command == "version") {
    std::cout << "queryflux " << QF_VERSION << "\n";
    return 0;
  }
  if (!logging::setup(opts.log_level, opts.log_format)) {
    std::cerr << "queryflux: unknown --log-level or --log-format\n";
    return 2;
  }
  if (opts.command == "validate")
    return validate(opts);
  if (opts.command == "serve")
    return serve(opts);
  if (opts.command == "migrate")
    return migrate(opts);
  std::cerr << "queryflux: unknown command " << opts.command << "\n\n"
            << usage;
  return 2;
}

} // namespace qf::cli
