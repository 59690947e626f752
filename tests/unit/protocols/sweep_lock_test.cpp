// The sweep-lock calls and answers (/worker/sweep-lock/*): round trips of
// every verb, and each kind of bad body refused with its reason.
#include "protocols/worker_api/sweep_lock.hpp"

#include <gtest/gtest.h>

using namespace qf::worker_api;

namespace {

sweep_call publish_call() {
  sweep_call c;
  c.name = "engine-reconcile";
  c.holder = "checkout-7f9c";
  c.token = 1764800000000001;
  c.counts = {{"pg-1", 3, {}, 0}, {"trino-1", 0, {}, 0}};
  return c;
}

} // namespace

TEST(sweep_lock, calls_round_trip_with_what_each_verb_carries) {
  sweep_call acquire;
  acquire.name = "engine-reconcile";
  acquire.holder = "checkout-7f9c";
  acquire.ttl_secs = 9;
  auto a = decode_sweep_call(sweep_verb::acquire, encode(sweep_verb::acquire, acquire));
  ASSERT_TRUE(a.call) << a.error;
  EXPECT_EQ(*a.call, acquire);

  auto p = decode_sweep_call(sweep_verb::publish, encode(sweep_verb::publish, publish_call()));
  ASSERT_TRUE(p.call) << p.error;
  EXPECT_EQ(*p.call, publish_call());

  auto release = publish_call();
  release.counts.clear();
  auto r = decode_sweep_call(sweep_verb::release, encode(sweep_verb::release, release));
  ASSERT_TRUE(r.call) << r.error;
  EXPECT_EQ(*r.call, release);
}

TEST(sweep_lock, answers_round_trip) {
  sweep_answer granted{true, "w1", 42, 9000, {}};
  EXPECT_EQ(decode_sweep_answer(sweep_verb::acquire, encode(sweep_verb::acquire, granted)),
            granted);
  sweep_answer denied{false, "w2", 0, 1500, {}};
  EXPECT_EQ(decode_sweep_answer(sweep_verb::acquire, encode(sweep_verb::acquire, denied)),
            denied);
  sweep_answer counts;
  counts.counts = {{"pg-1", 3, "w1", 1200}};
  EXPECT_EQ(decode_sweep_answer(sweep_verb::counts, encode(sweep_verb::counts, counts)), counts);
  EXPECT_FALSE(decode_sweep_answer(sweep_verb::acquire, R"({"granted":true,"holder":"w"})"));
  EXPECT_FALSE(decode_sweep_answer(sweep_verb::counts, R"({"counts":[{"cluster":"a"}]})"));
  EXPECT_FALSE(decode_sweep_answer(sweep_verb::counts, "<html>"));
}

TEST(sweep_lock, bad_calls_are_refused_with_their_reason) {
  auto error_of = [](sweep_verb v, std::string_view body) {
    return decode_sweep_call(v, body).error;
  };
  const auto acquire = sweep_verb::acquire;
  const auto publish = sweep_verb::publish;
  EXPECT_EQ(error_of(acquire, "{nope"), "the body must be a JSON object");
  EXPECT_EQ(error_of(acquire, "[1]"), "the body must be a JSON object");
  EXPECT_EQ(error_of(acquire, R"({"name":"a b","holder":"w","ttlSecs":3})"),
            "name: expected a lock's name (letters, digits, '.', '_', '-'; at most 128)");
  EXPECT_EQ(error_of(acquire, R"({"name":"l","ttlSecs":3})"),
            "holder: expected the name of the node asking");
  EXPECT_EQ(error_of(acquire, R"({"name":"l","holder":"w","ttlSecs":0})"),
            "ttlSecs: expected 1 to 3600");
  EXPECT_EQ(error_of(sweep_verb::release, R"({"name":"l","holder":"w"})"),
            "token: expected the token the lock was granted with");
  EXPECT_EQ(error_of(publish, R"({"name":"l","holder":"w","token":1,"counts":{}})"),
            "counts: expected an array of at most 1024 items");
  EXPECT_EQ(error_of(publish, R"({"name":"l","holder":"w","token":1,"counts":[{"running":1}]})"),
            "counts[0].cluster: expected a cluster's name");
  EXPECT_EQ(error_of(publish,
                     R"({"name":"l","holder":"w","token":1,"counts":[{"cluster":"a","running":-1}]})"),
            "counts[0].running: expected 0 to 1000000");
  EXPECT_EQ(error_of(publish, R"({"name":"l","holder":"w","token":1,"counts":[)"
                              R"({"cluster":"a","running":1},{"cluster":"a","running":2}]})"),
            "counts[1].cluster: a is listed twice");
  EXPECT_EQ(error_of(acquire, R"({"name":{"a":{"b":{"c":{}}}}})"), "the body nests too deep");
  EXPECT_EQ(error_of(acquire, std::string(max_sweep_call_bytes + 1, ' ')),
            "the body is larger than 256 KiB");
  EXPECT_EQ(error_of(sweep_verb::counts, "{}"),
            "counts takes no body: GET /worker/sweep-lock/counts?name=...");
}

TEST(sweep_lock, the_counts_query_names_a_lock_or_means_the_engine_lock) {
  EXPECT_EQ(counts_lock_name(""), "engine-reconcile");
  EXPECT_EQ(counts_lock_name("name=other.lock"), "other.lock");
  EXPECT_EQ(counts_lock_name("x=1&name=mine"), "mine");
  EXPECT_EQ(counts_lock_name("name=a%20b"), std::nullopt);
  EXPECT_EQ(counts_lock_name("name="), std::nullopt);
}

TEST(sweep_lock, verbs_have_their_path_names) {
  for (auto v : {sweep_verb::acquire, sweep_verb::release, sweep_verb::publish, sweep_verb::counts})
    EXPECT_EQ(sweep_verb_named(to_string(v)), v);
  EXPECT_EQ(sweep_verb_named("steal"), std::nullopt);
}
