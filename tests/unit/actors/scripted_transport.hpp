// An HTTP transport a test answers by hand: calls wait until the test
// answers them, so an actor's HTTP conversation runs on CAF's
// deterministic scheduler with no server and no clock.
#pragma once

#include "actors/worker/http_transport.hpp"

#include <functional>
#include <string>
#include <vector>

namespace qf {

/// Calls wait here until the test answers them.
class scripted_transport : public http_transport {
public:
  struct pending {
    http_call call;
    std::function<void(http_outcome)> done;
  };

  void send(http_call call, std::function<void(http_outcome)> done) override {
    calls.push_back({std::move(call), std::move(done)});
  }

  void resolve(std::string, std::function<void(std::vector<std::string>)> done) override {
    done(peers);
  }

  void stop() override {}

  /// Answers (and removes) the first call whose URL holds `part`; false
  /// when there is none.
  bool answer(const std::string& part, int status, std::string body = {}) {
    for (auto i = calls.begin(); i != calls.end(); ++i)
      if (i->call.url.find(part) != std::string::npos) {
        auto done = std::move(i->done);
        calls.erase(i);
        http_outcome o;
        o.status = status;
        o.body = std::move(body);
        done(std::move(o));
        return true;
      }
    return false;
  }

  std::vector<pending> calls;
  std::vector<std::string> peers;
};

} // namespace qf
