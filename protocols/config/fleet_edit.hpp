// Admin changes to the fleet (clusters, groups, routers), as pure
// functions: the fleet before, a request body, and either the fleet after
// (validated as a whole, like a config file) or an HTTP status and why not.
#pragma once

#include "protocols/config/fleet.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace qf::config {

enum class fleet_item { cluster, group };

struct fleet_edit {
  /// 200 changed, 201 created; 400 bad body, 404 no such item, 409 still
  /// in use (nothing changes for those).
  int status = 200;
  std::string message;
  fleet next;
  /// The whole config with `next`, for the running node; set when status
  /// is 200 or 201.
  std::optional<gateway_config> config;
};

/// Adds or replaces one item. The body is a JSON object with the keys the
/// config file gives the item (`engine`, `endpoint`, `members`, ...); a
/// `name` in it must match the path's.
fleet_edit put_item(const fleet& before, std::string_view yaml_text, fleet_item kind,
                    const std::string& name, std::string_view body);

/// Removes one item; 409 when a group, router or the fallback names it.
fleet_edit delete_item(const fleet& before, std::string_view yaml_text, fleet_item kind,
                       const std::string& name);

/// Sets a cluster's `enabled` flag (activate, deactivate). `running`, the
/// config of `before` when the caller has it, saves validating the whole
/// again: the flag cannot make a valid config invalid.
fleet_edit set_enabled(const fleet& before, std::string_view yaml_text,
                       const std::string& name, bool on,
                       const gateway_config* running = nullptr);

/// Replaces the routers and the fallback: {"routers": [...],
/// "routingFallback": "group"}; both keys may be left out (none, none).
fleet_edit put_routing(const fleet& before, std::string_view yaml_text, std::string_view body);

/// Trino Gateway's backend add/update: {name, proxyTo, externalUrl,
/// active, routingGroup}. proxyTo is the cluster's endpoint (http:// for
/// Trino, postgres://, mysql://, duckdb:PATH, sqlite:PATH); the cluster becomes a member of
/// routingGroup (default "adhoc") and of no other group. `add` refuses an
/// existing name (409); update adds a missing one, as Trino Gateway does.
fleet_edit put_backend(const fleet& before, std::string_view yaml_text, std::string_view body,
                       bool add);

/// Trino Gateway's backend delete: leaves its groups, then goes.
fleet_edit delete_backend(const fleet& before, std::string_view yaml_text,
                          const std::string& name);

/// What stands for a secret in what the admin API shows.
inline constexpr std::string_view secret_mask = "********";

/// An item as the admin API shows it: {"name": ..., its keys}, with every
/// `password` and `token` masked, and the password in an endpoint URL.
/// A PUT that sends a mask back keeps the stored secret.
std::string shown_item(const std::string& name, const std::string& stored);

/// A URL with its password masked: user:********@, and ?password=********.
std::string masked_url(const std::string& url);

/// The stored JSON of one item, or nullopt.
std::optional<std::string> find_item(const fleet& f, fleet_item kind, std::string_view name);

/// {"routers": [...], "routingFallback": "..." or null}.
std::string routing_json(const fleet& f);

} // namespace qf::config
