// Fuzzes what crosses between workers and control planes: snapshot bodies
// (from a control plane or a peer), heartbeat reports, labels files, lease
// calls and the answers to acquires, sweep-lock calls and their answers. Each is read or refused with a reason,
// never a crash; an accepted snapshot re-encodes to the revision it came
// with, an accepted call or answer to itself.
#include "protocols/common/canonical_json.hpp"
#include "protocols/worker_api/lease_call.hpp"
#include "protocols/worker_api/snapshot.hpp"
#include "protocols/worker_api/sweep_lock.hpp"
#include "protocols/worker_api/worker_report.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto text = std::string_view{reinterpret_cast<const char*>(data), size};
  auto snapshot = qf::worker_api::decode(text);
  if (snapshot.snapshot == std::nullopt && snapshot.error.empty())
    std::abort();
  if (snapshot.snapshot) {
    // What a worker accepts it can serve to its peers, unchanged.
    auto again = qf::worker_api::decode(qf::worker_api::peer_body(snapshot.snapshot->encoded, 1));
    if (!again.snapshot || again.snapshot->encoded.revision != snapshot.snapshot->encoded.revision)
      std::abort();
  }
  auto report = qf::worker_api::decode_report(text);
  if (report.report) {
    auto again = qf::worker_api::decode_report(qf::worker_api::encode(*report.report));
    if (!again.report || !(*again.report == *report.report))
      std::abort();
  } else if (report.error.empty()) {
    std::abort();
  }
  (void) qf::worker_api::parse_labels_file(text);
  using qf::worker_api::lease_verb;
  for (auto verb : {lease_verb::acquire, lease_verb::release, lease_verb::renew}) {
    auto call = qf::worker_api::decode_lease_call(verb, text);
    if (call.call) {
      auto again = qf::worker_api::decode_lease_call(verb, qf::worker_api::encode(verb, *call.call));
      if (!again.call || !(*again.call == *call.call))
        std::abort();
    } else if (call.error.empty()) {
      std::abort();
    }
  }
  if (auto answer = qf::worker_api::decode_acquire_answer(text)) {
    auto again = qf::worker_api::decode_acquire_answer(qf::worker_api::encode(*answer));
    if (!again || !(*again == *answer))
      std::abort();
  }
  // What a replica forwarding a call reads of the lease owner's answer:
  // what it encodes again for its worker reads back the same.
  for (auto verb : {lease_verb::acquire, lease_verb::release, lease_verb::renew})
    if (auto answer = qf::worker_api::decode_lease_answer(verb, text)) {
      auto again = qf::worker_api::decode_lease_answer(verb, qf::worker_api::encode(verb, *answer));
      if (!again || !(*again == *answer))
        std::abort();
    }
  (void) qf::worker_api::decode_refusal(text);
  using qf::worker_api::sweep_verb;
  for (auto verb : {sweep_verb::acquire, sweep_verb::release, sweep_verb::publish,
                    sweep_verb::counts}) {
    auto call = qf::worker_api::decode_sweep_call(verb, text);
    if (call.call) {
      auto again = qf::worker_api::decode_sweep_call(verb, qf::worker_api::encode(verb, *call.call));
      if (!again.call || !(*again.call == *call.call))
        std::abort();
    } else if (call.error.empty()) {
      std::abort();
    }
    if (auto answer = qf::worker_api::decode_sweep_answer(verb, text)) {
      auto again = qf::worker_api::decode_sweep_answer(verb, qf::worker_api::encode(verb, *answer));
      if (!again || !(*again == *answer))
        std::abort();
    }
  }
  (void) qf::worker_api::counts_lock_name(text);
  if (size < 4096) {
    auto doc = nlohmann::json::parse(text, nullptr, false);
    if (!doc.is_discarded())
      if (auto c = qf::json_text::canonical(doc)) {
        // Canonical text is JSON whose canonical text is itself.
        auto back = nlohmann::json::parse(*c, nullptr, false);
        if (back.is_discarded() || qf::json_text::canonical(back) != c)
          std::abort();
      }
  }
  return 0;
}
