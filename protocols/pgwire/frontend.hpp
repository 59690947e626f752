// PostgreSQL protocol 3.0, client to server: framing and message parsing.
// Pure: no sockets, no clock, never throws, never allocates without bound.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace qf::pgwire {

inline constexpr uint32_t protocol_v3 = 196608; // 3.0
inline constexpr uint32_t ssl_request_code = 80877103;
inline constexpr uint32_t gssenc_request_code = 80877104;
inline constexpr uint32_t cancel_request_code = 80877102;
/// PostgreSQL's own limit for startup packets.
inline constexpr size_t max_startup_length = 10000;

enum class decode_status : uint8_t { ok, need_more, error };

struct decode_result {
  decode_status status = decode_status::need_more;
  size_t consumed = 0;          // bytes the caller drops from the front
  const char* reason = nullptr; // set on error only
  size_t needed = 0; // need_more with the header read: the frame's whole size
};

/// One message: tag 0 for the untagged startup-phase packets.
struct frame {
  char tag = 0;
  std::string_view body;
};

/// Cuts the next frame off the front of input. Frames longer than
/// max_length (or max_startup_length before startup) are errors.
decode_result next_frame(std::string_view input, bool startup_phase,
                         size_t max_length, frame& out);

struct startup_message {
  uint32_t protocol = 0;
  std::map<std::string, std::string> params; // user, database, options...
};

struct ssl_request {};
struct gssenc_request {};

struct cancel_request {
  int32_t process_id = 0;
  int32_t secret_key = 0;
};

using startup_packet
  = std::variant<startup_message, ssl_request, gssenc_request, cancel_request>;

/// Parses a startup-phase frame body; nullopt when malformed.
std::optional<startup_packet> parse_startup(std::string_view body);

struct query {
  std::string sql;
};

struct parse {
  std::string statement;
  std::string sql;
  std::vector<uint32_t> param_types;
};

struct bind {
  std::string portal;
  std::string statement;
  std::vector<int16_t> param_formats; // 0 text, 1 binary
  std::vector<std::optional<std::string>> params;
  std::vector<int16_t> result_formats;
};

struct describe {
  char kind = 'S'; // 'S' statement, 'P' portal
  std::string name;
};

struct execute {
  std::string portal;
  int32_t max_rows = 0; // 0: all
};

struct close {
  char kind = 'S';
  std::string name;
};

struct sync {};
struct flush {};
struct terminate {};

struct password {
  std::string value;
};

using message = std::variant<query, parse, bind, describe, execute, close,
                             sync, flush, terminate, password>;

/// Parses a tagged frame; nullopt for unknown tags or malformed bodies.
std::optional<message> parse_message(const frame& f);

} // namespace qf::pgwire
