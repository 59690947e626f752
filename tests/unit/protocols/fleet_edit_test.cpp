#include "protocols/config/fleet_edit.hpp"

#include <gtest/gtest.h>

using namespace qf::config;

namespace {

constexpr const char* file = R"(
queryflux: { adminApi: { port: 9100 } }
clusters:
  a: { engine: duckDb }
  b: { engine: sqlite, maxRunningQueries: 2 }
clusterGroups:
  g: { members: [a, b] }
  h: { members: [b] }
routers:
  - { type: header, headerName: x-team, headerValueToGroup: { h: h } }
routingFallback: g
)";

const fleet before = fleet_of(file);

} // namespace

TEST(fleet_edit, put_adds_or_replaces_and_validates_the_whole) {
  auto added = put_item(before, file, fleet_item::cluster, "c", R"({"engine":"duckDb","name":"c"})");
  ASSERT_EQ(added.status, 201) << added.message;
  EXPECT_EQ(find_item(added.next, fleet_item::cluster, "c"), R"({"engine":"duckDb"})");
  ASSERT_TRUE(added.config);
  EXPECT_NE(added.config->find_cluster("c"), nullptr);

  auto replaced = put_item(before, file, fleet_item::cluster, "b", R"({"engine":"duckDb"})");
  EXPECT_EQ(replaced.status, 200);
  EXPECT_EQ(replaced.next.clusters.size(), 2u);
  EXPECT_EQ(replaced.config->find_cluster("b")->engine, engine_kind::duck_db);
}

TEST(fleet_edit, bad_bodies_are_refused_with_the_reason_and_no_config) {
  struct bad {
    fleet_item kind;
    const char* name;
    const char* body;
    const char* why;
  };
  for (const auto& c : std::initializer_list<bad>{
         {fleet_item::cluster, "c", "{", "not valid JSON"},
         {fleet_item::cluster, "c", "[]", "JSON object"},
         {fleet_item::cluster, "c", R"({"engine":"duckDb","x":1})", "clusters.c.x: unknown key"},
         {fleet_item::cluster, "c", R"({"engine":"duckDb","name":"d"})", "differs"},
         {fleet_item::group, "k", R"({"members":["zz"]})", "unknown cluster \"zz\""},
         {fleet_item::group, "k", R"({"members":"a"})", "clusterGroups.k.members"},
       }) {
    auto e = put_item(before, file, c.kind, c.name, c.body);
    EXPECT_EQ(e.status, 400) << c.body;
    EXPECT_NE(e.message.find(c.why), std::string::npos) << e.message;
    EXPECT_FALSE(e.config);
  }
}

TEST(fleet_edit, delete_refuses_what_is_still_named_and_what_is_not_there) {
  EXPECT_EQ(delete_item(before, file, fleet_item::cluster, "zz").status, 404);
  auto used = delete_item(before, file, fleet_item::cluster, "b");
  EXPECT_EQ(used.status, 409);
  EXPECT_NE(used.message.find("cluster b is still in use"), std::string::npos) << used.message;
  EXPECT_EQ(delete_item(before, file, fleet_item::group, "h").status, 409) << "a router names h";

  auto unrouted = put_routing(before, file, R"({"routingFallback":"g"})");
  ASSERT_EQ(unrouted.status, 200) << unrouted.message;
  auto gone = delete_item(unrouted.next, file, fleet_item::group, "h");
  ASSERT_EQ(gone.status, 200) << gone.message;
  EXPECT_FALSE(find_item(gone.next, fleet_item::group, "h"));
}

TEST(fleet_edit, set_enabled_flips_only_the_flag) {
  auto off = set_enabled(before, file, "b", false);
  ASSERT_EQ(off.status, 200);
  EXPECT_EQ(find_item(off.next, fleet_item::cluster, "b"),
            R"({"enabled":false,"engine":"sqlite","maxRunningQueries":2})");
  EXPECT_FALSE(off.config->find_cluster("b")->enabled);
  EXPECT_EQ(set_enabled(before, file, "zz", true).status, 404);
}

TEST(fleet_edit, routing_keys_are_checked) {
  EXPECT_EQ(put_routing(before, file, R"({"routes":[]})").status, 400);
  EXPECT_EQ(put_routing(before, file, R"({"routers":{}})").status, 400);
  EXPECT_EQ(put_routing(before, file, R"({"routingFallback":"nope"})").status, 400);
  auto none = put_routing(before, file, R"({"routers":[],"routingFallback":null})");
  EXPECT_EQ(none.status, 400) << "two groups need a fallback";
  EXPECT_EQ(routing_json(before),
            R"({"routers":[{"type":"header","headerName":"x-team","headerValueToGroup":{"h":"h"}}],"routingFallback":"g"})");
}

TEST(fleet_edit, trino_gateway_backends_map_onto_clusters_and_one_group) {
  auto added = put_backend(before, file,
                           R"({"name":"t","proxyTo":"postgres://u@db:5432/x","active":false,"routingGroup":"h"})",
                           true);
  ASSERT_EQ(added.status, 200) << added.message;
  EXPECT_EQ(find_item(added.next, fleet_item::cluster, "t"),
            R"({"enabled":false,"endpoint":"postgres://u@db:5432/x","engine":"postgres"})");
  EXPECT_EQ(added.config->find_group("h")->members, (std::vector<std::string>{"b", "t"}));

  auto moved = put_backend(before, file, R"({"name":"a","proxyTo":"duckdb:/tmp/x.db","routingGroup":"h"})",
                           false);
  ASSERT_EQ(moved.status, 200) << moved.message;
  EXPECT_EQ(moved.config->find_group("g")->members, std::vector<std::string>{"b"});
  EXPECT_EQ(moved.config->find_cluster("a")->database_path, "/tmp/x.db");

  EXPECT_EQ(put_backend(before, file, R"({"name":"a","proxyTo":"duckdb:"})", true).status, 409);
  EXPECT_EQ(put_backend(before, file, R"({"name":"t","proxyTo":"ftp://trino:8443","routingGroup":"g"})", true)
              .status,
            400);
  auto trino = put_backend(before, file, R"({"name":"t","proxyTo":"http://trino:8080","routingGroup":"g"})", true);
  ASSERT_EQ(trino.status, 200) << trino.message;
  EXPECT_EQ(trino.config->find_cluster("t")->engine, engine_kind::trino);
  EXPECT_EQ(put_backend(before, file, R"({"name":"t","proxyTo":"duckdb:"})", true).status, 400)
    << "no group adhoc";

  auto deleted = delete_backend(before, file, "a");
  ASSERT_EQ(deleted.status, 200) << deleted.message;
  EXPECT_EQ(deleted.config->find_group("g")->members, std::vector<std::string>{"b"});
  EXPECT_EQ(delete_backend(before, file, "b").status, 409) << "h would have no members";
  EXPECT_EQ(delete_backend(before, file, "zz").status, 404);
}

TEST(fleet_edit, a_backends_external_url_is_kept_apart_from_its_proxy_to) {
  auto added = put_backend(before, file,
                           R"({"name":"t","proxyTo":"http://trino-1:8080",)"
                           R"("externalUrl":"https://trino.example.com","routingGroup":"g"})",
                           true);
  ASSERT_EQ(added.status, 200) << added.message;
  const auto* t = added.config->find_cluster("t");
  EXPECT_EQ(t->endpoint, "http://trino-1:8080");
  EXPECT_EQ(t->external_url, "https://trino.example.com");
  // The same as proxyTo, or left out by an update: nothing of its own.
  auto same = put_backend(added.next, file,
                          R"({"name":"t","proxyTo":"http://trino-1:8080",)"
                          R"("externalUrl":"http://trino-1:8080","routingGroup":"g"})",
                          false);
  ASSERT_EQ(same.status, 200) << same.message;
  EXPECT_EQ(same.config->find_cluster("t")->external_url, "");
  auto dropped = put_backend(added.next, file,
                             R"({"name":"t","proxyTo":"http://trino-1:8080","routingGroup":"g"})",
                             false);
  EXPECT_EQ(dropped.config->find_cluster("t")->external_url, "");
  // It must be a URL people can open.
  EXPECT_EQ(put_backend(before, file,
                        R"({"name":"t","proxyTo":"http://trino-1:8080","externalUrl":"trino:8080",)"
                        R"("routingGroup":"g"})",
                        true)
              .status,
            400);
}

TEST(fleet_edit, secrets_are_shown_masked_and_a_masked_one_sent_back_is_kept) {
  auto with_secrets = put_item(
    before, file, fleet_item::cluster, "p",
    R"({"engine":"postgres","endpoint":"postgres://qf:pw@db:5432/x","password":"pw2"})");
  ASSERT_EQ(with_secrets.status, 201) << with_secrets.message;
  auto stored = *find_item(with_secrets.next, fleet_item::cluster, "p");
  auto shown = shown_item("p", stored);
  EXPECT_EQ(shown, R"({"name":"p","endpoint":"postgres://qf:********@db:5432/x","engine":"postgres","password":"********"})");
  EXPECT_EQ(shown.find("pw"), std::string::npos);

  // What GET showed, with one change, PUT back: the secrets stay.
  auto edited = shown;
  edited.replace(edited.find("db:5432"), 7, "db:6432");
  auto again = put_item(with_secrets.next, file, fleet_item::cluster, "p", edited);
  ASSERT_EQ(again.status, 200) << again.message;
  EXPECT_EQ(again.config->find_cluster("p")->password, "pw2");
  EXPECT_EQ(again.config->find_cluster("p")->endpoint, "postgres://qf:********@db:6432/x")
    << "a changed endpoint is taken as sent";
  auto same = put_item(with_secrets.next, file, fleet_item::cluster, "p", shown);
  EXPECT_EQ(same.config->find_cluster("p")->endpoint, "postgres://qf:pw@db:5432/x");

  auto trino = put_item(before, file, fleet_item::cluster, "t",
                        R"({"engine":"trino","endpoint":"http://t:8080","auth":{"type":"bearer","token":"tok"}})");
  ASSERT_EQ(trino.status, 201) << trino.message;
  auto t_shown = shown_item("t", *find_item(trino.next, fleet_item::cluster, "t"));
  EXPECT_NE(t_shown.find(R"("token":"********")"), std::string::npos) << t_shown;
  auto t_again = put_item(trino.next, file, fleet_item::cluster, "t", t_shown);
  EXPECT_EQ(t_again.config->find_cluster("t")->auth.token, "tok");
}

TEST(fleet_edit, set_enabled_on_the_running_config_gives_what_validating_gives) {
  auto running = load_with_fleet(file, before);
  ASSERT_TRUE(running.config);
  auto fast = set_enabled(before, file, "a", false, &*running.config);
  auto slow = set_enabled(before, file, "a", false);
  ASSERT_EQ(fast.status, 200);
  EXPECT_EQ(fast.next, slow.next);
  EXPECT_EQ(fast.config->clusters, slow.config->clusters);
  EXPECT_EQ(fast.config->groups, slow.config->groups);
  EXPECT_EQ(set_enabled(before, file, "zz", false, &*running.config).status, 404);
}

TEST(fleet_edit, names_are_plain_and_url_passwords_are_masked) {
  for (const char* bad : {"", "-x", "a b", "a/b", "\xff", "a\r\nb"})
    EXPECT_EQ(put_item(before, file, fleet_item::cluster, bad, R"({"engine":"duckDb"})").status, 400)
      << bad;
  EXPECT_EQ(put_item(before, file, fleet_item::cluster, "eu-west.2_a", R"({"engine":"duckDb"})").status,
            201);
  EXPECT_EQ(masked_url("postgres://u:pw@h:5432/db?sslmode=require&password=x&a=b"),
            "postgres://u:********@h:5432/db?sslmode=require&password=********&a=b");
  EXPECT_EQ(masked_url("postgres://h/db?password=x"), "postgres://h/db?password=********");
  EXPECT_EQ(masked_url("http://trino:8080/path@x"), "http://trino:8080/path@x");
  // Trino Gateway's update sends back what /gateway/backend/all showed.
  auto with_pw = put_backend(before, file, R"({"name":"p","proxyTo":"postgres://u:pw@db/x","routingGroup":"g"})",
                             true);
  ASSERT_EQ(with_pw.status, 200) << with_pw.message;
  auto again = put_backend(with_pw.next, file,
                           R"({"name":"p","proxyTo":"postgres://u:********@db/x","routingGroup":"g"})", false);
  ASSERT_EQ(again.status, 200) << again.message;
  EXPECT_EQ(again.config->find_cluster("p")->endpoint, "postgres://u:pw@db/x");
}
