// How a wire session's answers leave for its client, shared by the
// PostgreSQL and MySQL sessions: what the state machine wrote goes out at
// the end of the wire thread's round; a large result streams, and past
// output_high_water unsent the session stops reading its backend until the
// client has taken most of it.
#pragma once

#include "net/wire/tcp_server.hpp"

#include <cstddef>
#include <utility>

namespace qf {

/// Rows are sent once this much output has gathered.
inline constexpr size_t output_flush_size = 64 * 1024;
/// Past this much unsent output, reading the backend waits for the client.
inline constexpr size_t output_high_water = 1 << 20;

/// Sends what the state machine wrote.
template <class Session>
void flush_output(Session& session, wire::connection& conn) {
  if (session.output_size() == 0)
    return;
  conn.send(session.output());
  session.clear_output();
}

/// After rows were added: a small result leaves with its end in one send,
/// a large one streams; false (pause the backend) while the client has
/// more than output_high_water to take, and `resume` runs once it took it.
template <class Session, class Resume>
bool stream_on(Session& session, wire::connection& conn, Resume resume) {
  if (session.output_size() >= output_flush_size)
    flush_output(session, conn);
  if (conn.pending_output() < output_high_water)
    return true;
  conn.when_drained(std::move(resume));
  return false;
}

} // namespace qf
