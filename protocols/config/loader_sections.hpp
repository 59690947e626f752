// The loader's sections, one file each: the node-local part
// (loader_node.cpp), the fleet (loader_fleet.cpp) and worker mode
// (loader_worker.cpp). Internal to protocols/config.
#pragma once

#include "protocols/config/yaml_walker.hpp"

namespace qf::config::detail {

/// queryflux: frontends, admin port, persistence and the node's settings.
void read_node(walker& w, const YAML::Node& n, node& out);

void read_database_cache(walker& w, const YAML::Node& n, database_cache& out);

void read_auth(walker& w, const YAML::Node& n, gateway_config& c);

/// `health` is the global monitor, which a cluster's own takes over.
void read_cluster(walker& w, const std::string& name, const YAML::Node& n,
                  const std::string& path, const monitor& health, cluster& out);

/// monitor: the interval, the timeout and every cluster's probe.
void read_monitor(walker& w, const YAML::Node& n, monitor& out);

/// Trino Gateway's clusterStatsConfiguration.monitorType, as monitor.type.
void read_cluster_stats_configuration(walker& w, const YAML::Node& n, monitor& out);

/// clusters.<name>.monitor over the global probe (out.engine read first).
void read_cluster_monitor(walker& w, const YAML::Node& n, const std::string& path,
                          const health_probe& global, cluster& out);

void read_group(walker& w, const std::string& name, const YAML::Node& n,
                const std::string& path, cluster_group& out);

void read_router(walker& w, const YAML::Node& n, const std::string& path, router& out);

/// Cross-references: run after the whole file is read.
void check_references(walker& w, const gateway_config& c);

/// queryflux.workerApi (control plane, standalone).
void read_worker_api(walker& w, const YAML::Node& n, const std::string& path, worker_api& out);

/// The keys of queryflux.* a worker reads (reported on other roles), and
/// what a worker's queryflux.* may not hold; `out.role` is read first.
void read_worker_settings(walker& w, const YAML::Node& n, node& out);

/// translation: its failure policy and the local scripts.
void read_translation(walker& w, const YAML::Node& n, translation& out);

/// role: worker: reports each top-level section the control plane owns
/// (the fleet ones only when they did not come from a snapshot) and
/// returns the keys found, which the caller then does not call unknown.
std::vector<std::string_view> report_owned_by_control_plane(walker& w, const YAML::Node& root,
                                                            bool fleet_from_snapshot);

} // namespace qf::config::detail
