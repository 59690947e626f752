#include "actors/control/config_writer.hpp"

#include "actors/control/fleet_tables.hpp"
#include "actors/control/database_url.hpp"
#include "actors/node/metrics.hpp"
#include "actors/node/snapshot_holder.hpp"

#include <caf/all.hpp>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <spdlog/spdlog.h>

#include <cstdlib>

namespace qf {

namespace {

using clock = std::chrono::steady_clock;

struct writer_state {
  config_writer_settings cfg;
  std::unique_ptr<pqxx::connection> conn;
  /// The database revision the node last took (or refused).
  int64_t revision = -1;
  /// When the database last answered: the databaseCache's write time.
  clock::time_point last_read = clock::now();
  bool expired = false;

  pqxx::connection& connected() {
    if (!conn || !conn->is_open())
      // A read held up by a lock, or a database that stops answering,
      // fails after 10 s; the node and its workers keep the last good
      // config meanwhile.
      conn = std::make_unique<pqxx::connection>(with_timeouts(cfg.url, 10'000));
    return *conn;
  }
};

/// `running`: the node's config when it is that of `before`.
config::fleet_edit edit(const config::fleet& before, const std::string& text,
                        const fleet_request& r, const config::gateway_config* running) {
  switch (r.what) {
    case fleet_request::op::put:
      return config::put_item(before, text, r.kind, r.name, r.body);
    case fleet_request::op::add:
      if (config::find_item(before, r.kind, r.name)) {
        config::fleet_edit taken;
        taken.status = 409;
        taken.message = r.name + " exists already";
        return taken;
      }
      return config::put_item(before, text, r.kind, r.name, r.body);
    case fleet_request::op::put_backend:
      return config::put_backend(before, text, r.body, r.on);
    case fleet_request::op::erase_backend:
      return config::delete_backend(before, text, r.name);
    case fleet_request::op::erase:
      return config::delete_item(before, text, r.kind, r.name);
    case fleet_request::op::set_enabled:
      return config::set_enabled(before, text, r.name, r.on, running);
    case fleet_request::op::put_routing:
      break;
  }
  return config::put_routing(before, text, r.body);
}

std::string answer_body(const fleet_request& r, const config::fleet& next) {
  switch (r.what) {
    case fleet_request::op::erase:
    case fleet_request::op::erase_backend:
      return "{\"deleted\":" + nlohmann::json(r.name).dump() + "}";
    case fleet_request::op::put_backend:
      return r.body;
    case fleet_request::op::put_routing:
      return config::routing_json(next);
    default:
      return config::shown_item(r.name, config::find_item(next, r.kind, r.name).value_or("{}"));
  }
}

/// Tests make the running node refuse changes to the items named in
/// QF_TEST_REFUSE_APPLY (comma-separated), to see the compensation work;
/// `name+undo` makes the undo fail too.
bool named_for_test(const std::string& name, std::string_view suffix = {}) {
  const char* refuse = std::getenv("QF_TEST_REFUSE_APPLY");
  if (!refuse || name.empty())
    return false;
  std::string_view list{refuse};
  auto wanted = name + std::string{suffix};
  for (size_t start = 0; start <= list.size();) {
    auto end = std::min(list.find(',', start), list.size());
    auto item = list.substr(start, end - start);
    if (item == wanted || (suffix.empty() && item == name + "+undo"))
      return true;
    start = end + 1;
  }
  return false;
}


/// Hands the fleet to the snapshot holder and waits for its answer (this
/// thread is our own: the actor is detached).
enum class applied { yes, refused, unknown };

applied apply(caf::event_based_actor* self, const writer_state& st, config::gateway_config cfg,
              config::fleet fleet) {
  caf::scoped_actor waiter{self->system()};
  auto out = applied::unknown;
  waiter
    ->request(st.cfg.holder, std::chrono::seconds(10), atom::update::value,
              fleet_update{std::make_shared<const config::gateway_config>(std::move(cfg)),
                           std::move(fleet)})
    .receive([&](bool ok) { out = ok ? applied::yes : applied::refused; },
             [&](caf::error& err) {
               spdlog::error("the running node did not answer a configuration change: {}",
                             caf::to_string(err));
             });
  return out;
}

/// A cluster updated through either API has its health start over (the
/// spec's table), also when the node kept it as it was (only its routing
/// group changed).
void recheck_updated(const writer_state& st, const fleet_request& r) {
  std::string name;
  if (r.what == fleet_request::op::put && r.kind == config::fleet_item::cluster) {
    name = r.name;
  } else if (r.what == fleet_request::op::put_backend) {
    auto body = nlohmann::json::parse(r.body, nullptr, false);
    if (body.is_object() && body.contains("name") && body["name"].is_string())
      name = body["name"].get<std::string>();
  }
  auto active = st.cfg.snapshot->load();
  if (name.empty() || !active)
    return;
  if (auto c = active->clusters.find(name); c != active->clusters.end() && c->second->enabled)
    caf::anon_send(c->second->actor, atom::recheck::value);
}

void change_in_memory(caf::event_based_actor* self, writer_state& st, const fleet_request& r,
                      const admin_respond& respond) {
  auto active = st.cfg.snapshot->load();
  if (!active)
    return respond({503, "no active configuration"});
  auto e = edit(active->fleet, st.cfg.config_text, r, active->config.get());
  if (e.status >= 300)
    return respond({e.status, e.message});
  if (named_for_test(r.name) || apply(self, st, std::move(*e.config), e.next) != applied::yes)
    return respond({500, "the running node did not accept the change"});
  recheck_updated(st, r);
  respond({e.status, answer_body(r, e.next)});
}

void change_stored(caf::event_based_actor* self, writer_state& st, const fleet_request& r,
                   const admin_respond& respond) {
  config::fleet before;
  config::fleet_edit e;
  try {
    pqxx::work tx{st.connected()};
    fleet_tables::lock(tx);
    before = fleet_tables::read(tx);
    auto active = st.cfg.snapshot->load();
    bool current = active && active->fleet == before; // no other replica's change pending
    e = edit(before, st.cfg.config_text, r, current ? active->config.get() : nullptr);
    if (e.status >= 300)
      return respond({e.status, e.message}); // rolled back: nothing written
    st.revision = fleet_tables::write_changes(tx, before, e.next);
    // As PostgreSQL spells the JSON (jsonb), so that the node's fleet and
    // the database's compare equal afterwards.
    e.next = fleet_tables::read(tx);
    tx.commit();
    st.last_read = clock::now();
  } catch (const std::exception& ex) {
    st.conn.reset();
    spdlog::error("cannot store a configuration change: {}", ex.what());
    return respond({503, "the configuration database cannot be reached; nothing changed"});
  }
  auto outcome = named_for_test(r.name) ? applied::refused
                                          : apply(self, st, std::move(*e.config), e.next);
  if (outcome == applied::yes) {
    recheck_updated(st, r);
    return respond({e.status, answer_body(r, e.next)});
  }
  if (outcome == applied::unknown) {
    // The node may still take it: undoing now could leave the two apart
    // for good. The database keeps the change, and the reload (which
    // this forgets having seen) brings the node to it either way.
    st.revision = -1;
    return respond({503, "the change is stored, but the running node did not answer in time; "
                         "it follows the database within configReloadIntervalSecs"});
  }
  // Compensation: the node did not take it, so neither does the database.
  // A failing compensation is attached; the original error is the answer.
  std::string error = "the running node did not accept the change";
  try {
    if (named_for_test(r.name, "+undo"))
      throw std::runtime_error("injected by QF_TEST_REFUSE_APPLY");
    pqxx::work tx{st.connected()};
    fleet_tables::lock(tx);
    st.revision = fleet_tables::write_changes(tx, e.next, before);
    tx.commit();
    error += "; it was undone in the database";
  } catch (const std::exception& ex) {
    st.conn.reset();
    error += " (undoing it in the database failed too: ";
    error += ex.what();
    error += ")";
  }
  spdlog::error("{}: {}", r.name.empty() ? "routing" : r.name, error);
  respond({500, error});
}

/// The background re-read: changes made by other replicas, and the
/// databaseCache's refresh and expiry.
void reload(caf::event_based_actor* self, writer_state& st) {
  try {
    auto rev = fleet_tables::revision(st.connected());
    st.last_read = clock::now();
    if (st.expired) {
      st.expired = false;
      spdlog::info("the configuration database answers again; routing resumes");
      caf::anon_send(st.cfg.holder, atom::close::value, false);
    }
    if (rev == st.revision)
      return;
    pqxx::work tx{st.connected()};
    auto stored = fleet_tables::read(tx);
    tx.commit();
    st.revision = rev;
    auto active = st.cfg.snapshot->load();
    if (active && active->fleet == stored)
      return;
    auto loaded = config::load_with_fleet(st.cfg.config_text, stored);
    if (!loaded.config) {
      for (const auto& p : loaded.problems)
        spdlog::error("the configuration in the database cannot be used: {}", p);
      st.cfg.stats->config_reload_failed("reload");
      return;
    }
    if (apply(self, st, std::move(*loaded.config), std::move(stored)) != applied::yes) {
      st.cfg.stats->config_reload_failed("reload");
      return;
    }
    spdlog::info("configuration revision {} from the database is active", rev);
  } catch (const std::exception& ex) {
    st.conn.reset();
    auto& expire = st.cfg.expire_after;
    if (expire && !st.expired && clock::now() - st.last_read >= *expire) {
      st.expired = true;
      spdlog::error("the cluster list was not read from the database for {} s "
                    "(databaseCache.expireAfterWrite): new queries fail until it answers",
                    std::chrono::duration_cast<std::chrono::seconds>(*expire).count());
      caf::anon_send(st.cfg.holder, atom::close::value, true);
    } else {
      spdlog::warn("cannot read the configuration database: {}", ex.what());
    }
    st.cfg.stats->config_reload_failed("reload");
  }
}

} // namespace

caf::behavior config_writer(caf::event_based_actor* self, config_writer_settings settings) {
  auto st = std::make_shared<writer_state>();
  st->cfg = std::move(settings);
  if (!st->cfg.url.empty()) {
    try {
      st->revision = fleet_tables::revision(st->connected());
    } catch (const std::exception& e) {
      st->conn.reset();
      spdlog::warn("cannot read the configuration revision: {}", e.what());
    }
    auto every = st->cfg.reload_every.count() > 0 ? st->cfg.reload_every
                                                  : st->cfg.expire_after.value_or(
                                                    std::chrono::milliseconds{0});
    st->cfg.reload_every = every;
    if (every.count() > 0)
      self->delayed_send(self, every, atom::reload::value);
  }
  return {
    [self, st](atom::update, const fleet_request& r, const admin_respond& respond) {
      // Nothing a request carries may end this actor: every later change
      // would be lost with it.
      try {
        if (st->cfg.url.empty())
          change_in_memory(self, *st, r, respond);
        else
          change_stored(self, *st, r, respond);
      } catch (const std::exception& e) {
        spdlog::error("a configuration change failed: {}", e.what());
        respond({500, std::string{"the change failed: "} + e.what()});
      }
    },
    [self, st](atom::reload) {
      reload(self, *st);
      self->delayed_send(self, st->cfg.reload_every, atom::reload::value);
    },
    [self, st](atom::changed) {
      if (!st->cfg.url.empty())
        reload(self, *st);
    },
  };
}

} // namespace qf
