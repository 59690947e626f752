// A snapshot the worker cannot trust or compile (hash mismatch, truncated,
// not JSON, a schemaVersion from the future, a router that does not compile)
// is rejected: the previous config stays active, the error shows in
// /worker/status and the control plane's registry, the failure is counted,
// and the worker does not ask for the same snapshot again and again.
#include "tests/fleet/fleet_fixture.hpp"

#include "protocols/common/canonical_json.hpp"
#include "protocols/common/sha256.hpp"

#include <gtest/gtest.h>

using namespace qf;
using namespace qf::test_support;

namespace {

/// The body with its snapshot edited and hashed again: a snapshot as a
/// control plane of another version (or with another bug) would send it.
std::function<std::string(std::string)> rehashed(std::function<void(nlohmann::json&)> edit) {
  return [edit](std::string body) {
    auto doc = nlohmann::json::parse(body);
    edit(doc["snapshot"]);
    auto payload = json_text::canonical(doc["snapshot"]).value();
    return "{\"revision\":\"sha256:" + sha256_hex(payload) + "\",\"snapshot\":" + payload + "}";
  };
}

double activation_failures(fleet& f, size_t i) {
  return metric_value("127.0.0.1", f.worker(i).admin_port(),
                      "queryflux_config_reload_failures_total{stage=\"worker_activate\"}");
}

} // namespace

TEST_F(fleet_test, a_snapshot_that_cannot_be_trusted_or_compiled_leaves_the_old_one_active) {
  fleet f{{sqlite_fleet(1), url, ""}};
  f.add_worker(worker_named("w", 1));
  auto good = f.served_revision();
  ASSERT_TRUE(eventually([&] { return active(f, 0) == good; }));
  ASSERT_EQ(activation_failures(f, 0), 0);
  auto served_body = f.worker_api("/worker/config").body;

  struct bad_case {
    const char* what;
    std::function<std::string(std::string)> edit;
    const char* error;
  };
  std::vector<bad_case> cases{
    {"a changed body", [](std::string b) { return b.replace(b.find("sqlite"), 6, "duckDb"); },
     "is not the hash of its content"},
    {"a truncated body", [](std::string b) { return b.substr(0, b.size() / 2); },
     "not a JSON object (truncated?)"},
    {"not JSON", [](std::string) { return std::string{"<html>502 Bad Gateway</html>"}; },
     "not a JSON object"},
    {"a future schemaVersion", rehashed([](nlohmann::json& s) { s["schemaVersion"] = 2; }),
     "unknown snapshot schemaVersion 2 (this worker reads 1)"},
    {"a router that does not compile", rehashed([](nlohmann::json& s) {
       s["routers"].push_back({{"type", "queryRegex"},
                               {"rules", {{{"regex", "(unclosed"}, {"targetGroup", "g"}}}}});
     }),
     "routers[0].rules[0].regex: invalid regex"},
  };
  auto break_link = [&] {
    f.link(0).cut();
    ASSERT_TRUE(eventually([&] { return f.status(0).value("consecutiveFailures", 0) >= 1; }));
    f.link(0).restore();
  };
  double failures = 0;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    // The control plane as another version (or a broken one) would be: it
    // serves the edited snapshot as its current one, and holds the polls
    // of workers that have its revision.
    auto claimed = nlohmann::json::parse(c.edit(served_body), nullptr, false);
    auto claimed_revision = claimed.is_object() ? claimed.value("revision", "") : "";
    link_proxy::tamper t;
    t.body = c.edit;
    t.target = [claimed_revision, good](std::string target) {
      if (auto at = target.find(claimed_revision); !claimed_revision.empty() && at != std::string::npos)
        target.replace(at, claimed_revision.size(), good);
      return target;
    };
    f.link(0).tamper_with("/worker/config", t);
    // A new request goes out once the one under way (or the next) breaks.
    break_link();
    ASSERT_TRUE(eventually([&] {
      return f.status(0).value("lastError", nlohmann::json{""}).dump().find(c.error)
             != std::string::npos;
    })) << f.status(0).dump();
    EXPECT_EQ(active(f, 0), good);
    EXPECT_EQ(activation_failures(f, 0), ++failures);
    // The still active config serves.
    EXPECT_EQ(trino_query(f.worker(0).trino_port(), "SELECT v FROM t"),
              nlohmann::json::parse("[[1]]"));
    // The control plane hears of it with the heartbeats.
    ASSERT_TRUE(eventually([&] {
      return f.admin("GET", "/admin/workers/w").json().value("lastError", nlohmann::json{""})
               .dump()
               .find(c.error)
             != std::string::npos;
    }));
    // Meanwhile the worker waited, with the revision it rejected: one
    // snapshot fetched and refused, not one a second.
    auto seen = f.link(0).requests();
    size_t tampered = 0;
    for (auto i = seen.size(); i-- > 0;)
      if (seen[i] == "GET /worker/config") {
        tampered = i;
        break;
      }
    size_t fetches = 0;
    for (auto i = tampered; i < seen.size(); ++i)
      fetches += seen[i].find("/worker/config") != std::string::npos;
    EXPECT_LE(fetches, 2u) << "requests after the rejected snapshot: " << seen.size() - tampered;
    // As the worker sent it (before the proxy's rewrite): it waits for a
    // revision other than the one it was sent, whatever that was. The
    // heartbeat that told the control plane goes at once; the poll waits
    // for its token, so it may not have gone yet.
    auto expected = "since=" + (claimed_revision.empty() ? good : claimed_revision);
    std::string last_poll;
    EXPECT_TRUE(eventually([&] {
      auto now_seen = f.link(0).requests();
      for (auto i = tampered + 1; i < now_seen.size(); ++i)
        if (now_seen[i].find("/worker/config/wait?") != std::string::npos)
          last_poll = now_seen[i];
      return !last_poll.empty();
    }));
    EXPECT_NE(last_poll.find(expected), std::string::npos) << last_poll;
    EXPECT_EQ(activation_failures(f, 0), failures);
    // The control plane "rolls back": the worker confirms what it runs.
    f.link(0).clear_tamper();
    break_link();
    ASSERT_TRUE(eventually([&] { return f.status(0)["lastError"].is_null(); }))
      << f.status(0).dump();
  }

  // A good snapshot after all that is taken.
  ASSERT_EQ(f.admin("PUT", "/admin/config/clusters/lite", lite_with(2)).status, 200);
  auto next = f.served_revision();
  ASSERT_TRUE(eventually([&] { return active(f, 0) == next; }));
  EXPECT_TRUE(f.status(0)["lastError"].is_null()) << f.status(0).dump();
}
