// One pg_session actor per PostgreSQL connection; bytes travel as messages.
#include "net/boundary/pg_frontend.hpp"

#include "actors/data/pg_session.hpp"

#include <caf/all.hpp>

#include <random>

namespace qf::boundary {

namespace {

class pg_handler : public wire::handler {
public:
  explicit pg_handler(caf::actor session) : session_(std::move(session)) {
    // nop
  }

  void on_data(std::string bytes) override {
    caf::anon_send(session_, atom::data::value, std::move(bytes));
  }

  void on_closed() override {
    caf::anon_send_exit(session_, caf::exit_reason::user_shutdown);
  }

  void on_tls_ready() override {
    caf::anon_send(session_, atom::tls::value);
  }

private:
  caf::actor session_;
};

} // namespace

wire::handler_factory make_pg_frontend(std::shared_ptr<node_services> node,
                                       bool tls_available) {
  auto next_pid = std::make_shared<std::atomic<int32_t>>(1000);
  auto rng = std::make_shared<std::mutex>();
  auto device = std::make_shared<std::random_device>();
  return [node, next_pid, rng, device,
          tls_available](std::shared_ptr<wire::connection> conn) {
    int32_t secret = 0;
    {
      // The secret is what stops a stranger from cancelling our queries.
      std::lock_guard guard{*rng};
      secret = static_cast<int32_t>((*device)());
    }
    // The session keeps its connection open; the connection lets go of the
    // session's handler when the socket closes, which ends the session.
    wire_io io{
      [conn](std::string bytes) { conn->write(std::move(bytes)); },
      [conn] { conn->close(); },
      [conn] { conn->read_more(); },
      [conn] { conn->start_tls(); },
    };
    auto session = node->sys->spawn(pg_session, node, std::move(io),
                                    next_pid->fetch_add(1), secret,
                                    tls_available);
    return std::make_shared<pg_handler>(session);
  };
}

} // namespace qf::boundary
