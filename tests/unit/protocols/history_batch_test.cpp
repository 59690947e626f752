// The history batch a worker sends: what each redaction mode lets leave,
// the round trip, and the refusals of the control plane's reader.
#include "protocols/common/temporal.hpp"
#include "protocols/worker_api/history_batch.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace {

using namespace qf;
using namespace qf::worker_api;

query_record sample() {
  query_record r;
  r.proxy_query_id = "pg_20261204_101500_00001_abcde_1";
  r.user = "alice";
  r.source = "psql";
  r.cluster_group = "analytics";
  r.cluster_name = "pg-1";
  r.engine_type = "postgres";
  r.protocol = "postgresWire";
  r.sql = "SELECT * FROM accounts WHERE email = 'alice@example.com' AND balance > 1000";
  r.status = "Failed";
  r.error_message = "invalid input syntax for type integer: \"12ab\"";
  r.routing_trace = R"({"group":"analytics","trace":[{"router":"header","matched":true}]})";
  r.created_at_ms = 1764843300000;
  r.started_at_ms = 1764843300005;
  r.finished_at_ms = 1764843300042;
  r.queue_duration_ms = 5;
  r.execution_duration_ms = 37;
  r.rows_returned = 0;
  return r;
}

TEST(HistoryBatch, FullKeepsEverythingAndAddsFingerprints) {
  auto r = sample();
  redact(r, config::redaction::full);
  EXPECT_EQ(r.sql, sample().sql);
  EXPECT_EQ(r.error_message, sample().error_message);
  EXPECT_NE(r.query_hash, 0);
  EXPECT_NE(r.query_parameterized_hash, 0);
}

TEST(HistoryBatch, MaskLiteralsKeepsTheShapeOnly) {
  auto r = sample();
  redact(r, config::redaction::mask_literals);
  EXPECT_EQ(r.sql, "SELECT * FROM accounts WHERE email = ? AND balance > ?");
  EXPECT_EQ(r.error_message, "invalid input syntax for type integer: ?");
  EXPECT_FALSE(r.routing_trace.empty());
  // Equal queries with other values: one parameterized fingerprint, two
  // query fingerprints.
  auto other = sample();
  other.sql = "SELECT * FROM accounts WHERE email = 'bob@example.com' AND balance > 5";
  redact(other, config::redaction::mask_literals);
  EXPECT_EQ(other.query_parameterized_hash, r.query_parameterized_hash);
  EXPECT_NE(other.query_hash, r.query_hash);
  // The fingerprint of the statement as it ran, not of its digest.
  auto full = sample();
  redact(full, config::redaction::full);
  EXPECT_EQ(full.query_hash, r.query_hash);
}

TEST(HistoryBatch, MetadataSendsNoTextAtAll) {
  auto r = sample();
  redact(r, config::redaction::metadata);
  EXPECT_TRUE(r.sql.empty());
  EXPECT_TRUE(r.error_message.empty());
  EXPECT_TRUE(r.routing_trace.empty());
  EXPECT_NE(r.query_parameterized_hash, 0);
  EXPECT_EQ(r.execution_duration_ms, 37);
  auto body = encode_history_batch({r});
  EXPECT_EQ(body.find("alice@example.com"), std::string::npos);
  EXPECT_EQ(body.find("12ab"), std::string::npos);
  EXPECT_EQ(body.find("trace"), std::string::npos);
}

TEST(HistoryBatch, RoundTrip) {
  auto r = sample();
  r.worker = "would-be-ignored";
  fill_fingerprints(r);
  auto decoded = decode_history_batch(encode_history_batch({r, sample()}));
  ASSERT_TRUE(decoded.records) << decoded.error;
  ASSERT_EQ(decoded.records->size(), 2u);
  const auto& back = (*decoded.records)[0];
  EXPECT_EQ(back.proxy_query_id, r.proxy_query_id);
  EXPECT_EQ(back.sql, r.sql);
  EXPECT_EQ(back.error_message, r.error_message);
  EXPECT_EQ(nlohmann::json::parse(back.routing_trace), nlohmann::json::parse(r.routing_trace));
  EXPECT_EQ(back.query_hash, r.query_hash);
  EXPECT_EQ(back.query_parameterized_hash, r.query_parameterized_hash);
  EXPECT_EQ(back.created_at_ms, r.created_at_ms);
  EXPECT_EQ(back.execution_duration_ms, 37);
  EXPECT_TRUE(back.worker.empty()); // the control plane sets it from the caller
  EXPECT_EQ((*decoded.records)[1].query_hash, 0);
}

TEST(HistoryBatch, LongTextsAreCutBeforeTheyLeave) {
  auto r = sample();
  r.sql = "SELECT '" + std::string(100'000, 'x') + "'";
  r.routing_trace = "{\"cut\":\"" + std::string(20'000, 'y') + "\"}";
  auto decoded = decode_history_batch(encode_history_batch({r}));
  ASSERT_TRUE(decoded.records) << decoded.error;
  EXPECT_LE((*decoded.records)[0].sql.size(), max_sent_sql_bytes);
  EXPECT_TRUE((*decoded.records)[0].routing_trace.empty());
}

std::string refusal(const std::string& body) {
  auto d = decode_history_batch(body);
  EXPECT_FALSE(d.records) << body;
  return d.error;
}

TEST(HistoryBatch, RefusesWhatItCannotStore) {
  EXPECT_EQ(refusal("[]"), "the batch must be a JSON object");
  EXPECT_EQ(refusal("{\"records\":[]}"), "schemaVersion: required, a whole number");
  EXPECT_EQ(refusal("{\"schemaVersion\":1}"), "records: required, an array");
  EXPECT_EQ(refusal(R"({"schemaVersion":1,"records":[{"protocol":"trinoHttp","status":"Success"}]})"),
            "records[0].proxyQueryId: required");
  EXPECT_EQ(refusal(R"({"schemaVersion":1,"records":[{"proxyQueryId":"a","protocol":"x","status":"Done"}]})"),
            "records[0].status: expected Success, Failed, Cancelled or Denied");
  EXPECT_EQ(refusal(R"({"schemaVersion":1,"records":[{"proxyQueryId":"a","protocol":"x","status":"Success","rowsReturned":-1}]})"),
            "records[0].rowsReturned: expected a whole number from 0 to 253402300799999");
  EXPECT_EQ(refusal(R"({"schemaVersion":1,"records":[{"proxyQueryId":"a","protocol":"x","status":"Success","queryHash":12}]})"),
            "records[0].queryHash: expected a 64-bit integer as decimal text");
  EXPECT_EQ(refusal(R"({"schemaVersion":1,"records":[{"proxyQueryId":"a","protocol":"x","status":"Success","routingTrace":"text"}]})"),
            "records[0].routingTrace: expected an object, an array or null");
  EXPECT_EQ(refusal(R"({"schemaVersion":1,"records":[{"proxyQueryId":7}]})"),
            "records[0].proxyQueryId: expected a string of at most 1024 bytes");
  std::vector<query_record> many(max_history_records + 1, sample());
  EXPECT_EQ(refusal(encode_history_batch(many)), "records: at most 200 in one batch");
  EXPECT_EQ(refusal(std::string(300, '[')), "the batch nests too deep");
}

TEST(HistoryBatch, WhatPostgreSqlCannotStoreNeverBlocksABatch) {
  EXPECT_EQ(refusal(R"({"schemaVersion":1,"records":[{"proxyQueryId":"a","protocol":"x","status":"Success","createdAtMs":10000000000000000}]})"),
            "records[0].createdAtMs: expected a whole number from 0 to 253402300799999");
  auto d = decode_history_batch(
    R"({"schemaVersion":1,"records":[{"proxyQueryId":"a","protocol":"x","status":"Success","routingTrace":{"k":"a\u0000b"}}]})");
  ASSERT_TRUE(d.records) << d.error;
  EXPECT_TRUE((*d.records)[0].routing_trace.empty()) << "jsonb refuses \\u0000: the trace goes";
  // Short texts are cut so that replacing malformed bytes keeps them short.
  auto r = sample();
  r.user = std::string(1000, '\xE9'); // Latin-1, not UTF-8
  auto again = decode_history_batch(encode_history_batch({r}));
  ASSERT_TRUE(again.records) << again.error;
  EXPECT_LE((*again.records)[0].user.size(), 1024u);
}

TEST(HistoryBatch, TellsAnUnknownVersionApart) {
  auto d = decode_history_batch(R"({"schemaVersion":2,"records":[]})");
  EXPECT_FALSE(d.records);
  EXPECT_TRUE(d.unsupported_version);
  EXPECT_NE(d.error.find("upgrade the control plane first"), std::string::npos);
  EXPECT_FALSE(decode_history_batch(R"({"schemaVersion":"1","records":[]})").unsupported_version);
}

// How records' times are written for PostgreSQL's COPY and in answers.
TEST(HistoryBatch, TimesAsText) {
  EXPECT_EQ(utc_text(1764843300123, utc_style::postgres), "2025-12-04 10:15:00.123+00");
  EXPECT_EQ(utc_text(1764843300123, utc_style::iso), "2025-12-04T10:15:00.123Z");
  EXPECT_EQ(utc_text(0, utc_style::iso), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(utc_text(951782400000, utc_style::iso), "2000-02-29T00:00:00.000Z");
}

TEST(HistoryBatch, Answers) {
  auto a = decode_history_answer(encode({3, 2}));
  ASSERT_TRUE(a);
  EXPECT_EQ(a->accepted, 3u);
  EXPECT_EQ(a->duplicates, 2u);
  EXPECT_FALSE(decode_history_answer("ok"));
  EXPECT_FALSE(decode_history_answer("{\"accepted\":-1,\"duplicates\":0}"));
}

} // namespace
