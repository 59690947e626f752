// POST /worker/query-records: workers' query history into the control
// plane's. A batch is read whole before anything is stored (one bad record
// refuses all of it), attributed to the worker that sent it, and stored in
// one transaction by the history store, first record per proxy query id
// winning, so that a batch sent again changes nothing.
#include "net/boundary/worker_routes.hpp"
#include "protocols/worker_api/history_batch.hpp"
#include "protocols/worker_api/worker_report.hpp"

#include <caf/all.hpp>

namespace qf::boundary {

namespace {

using namespace std::chrono_literals;

http::response ingested(const std::shared_ptr<node_services>& node,
                        worker_api::history_ingest_answer a) {
  node->stats->history_ingested(a.accepted, a.duplicates);
  http::response res;
  res.body = worker_api::encode(a);
  return res;
}

/// Without PostgreSQL (a standalone node serving workers): into the ring,
/// skipping ids it holds.
worker_api::history_ingest_answer into_ring(history_ring& ring, std::vector<query_record> batch) {
  worker_api::history_ingest_answer a;
  for (auto& r : batch) {
    if (ring.record(r.proxy_query_id)) {
      ++a.duplicates;
      continue;
    }
    worker_api::fill_fingerprints(r);
    ring.record(std::move(r));
    ++a.accepted;
  }
  return a;
}

} // namespace

void ingest_query_records(const std::shared_ptr<node_services>& node, const http::request& req,
                          http::respond_fn respond) {
  if (req.body.size() > worker_api::max_history_batch_bytes)
    return respond(http::error_response(413, "the batch is larger than 8 MiB: send at most "
                                             "200 records at a time"));
  // Who ran these: the worker that calls, never what the records say.
  auto worker = req.header("x-queryflux-worker");
  if (!worker_api::valid_worker_name(worker))
    return respond(http::error_response(400, "X-QueryFlux-Worker: the calling worker's name "
                                             "is required (letters, digits, '-', '_', '.')"));
  auto decoded = worker_api::decode_history_batch(req.body);
  if (!decoded.records)
    return respond(decoded.unsupported_version
                     ? coded(400, "unsupportedSchemaVersion", decoded.error)
                     : http::error_response(400, decoded.error));
  auto records = std::move(*decoded.records);
  for (auto& r : records)
    r.worker = worker;
  if (node->history_writers.empty())
    return respond(ingested(node, into_ring(*node->history, std::move(records))));
  const uint64_t sent = records.size();
  const auto& writers = node->history_writers;
  auto writer = writers[node->next_writer++ % writers.size()];
  // Moved into the message once (ask() would copy 200 records twice).
  auto batch = std::make_shared<std::vector<query_record>>(std::move(records));
  node->sys->spawn([=](caf::event_based_actor* self) {
    self->request(writer, 30s, atom::put::value, std::move(*batch))
      .then(
        [node, respond, sent](uint64_t accepted) {
          respond(ingested(node, {accepted, sent - std::min(accepted, sent)}));
        },
        [respond](caf::error& err) {
          respond(retry_later(503, code_of(err) ? message_of(err) : caf::to_string(err)));
        });
  });
}

} // namespace qf::boundary
