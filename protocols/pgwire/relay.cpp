#include "protocols/pgwire/relay.hpp"

namespace qf::pgwire {

namespace {

uint32_t be32(const char* p) {
  auto b = [p](int i) { return static_cast<uint32_t>(static_cast<unsigned char>(p[i])); };
  return b(0) << 24 | b(1) << 16 | b(2) << 8 | b(3);
}

void append_be32(std::string& out, uint32_t n) {
  for (int shift = 24; shift >= 0; shift -= 8)
    out += static_cast<char>((n >> shift) & 0xFF);
}

/// An ErrorResponse body into its code and message, and rewritten without
/// its position field into out.
void read_error(std::string_view fields, relayed& r, std::string& out) {
  auto first = !r.error_code;
  std::string kept;
  while (!fields.empty() && fields[0] != '\0') {
    auto end = fields.find('\0', 1);
    if (end == std::string_view::npos)
      break; // unterminated: what came whole is kept
    auto type = fields[0];
    auto value = fields.substr(1, end - 1);
    if (first && type == 'C')
      r.error_code = std::string{value};
    else if (first && type == 'M')
      r.error_message = std::string{value};
    if ((type == 'S' || type == 'V') && (value == "FATAL" || value == "PANIC")) {
      // The server's session ended, not the client's, which carries on.
      kept += type;
      kept.append("ERROR", 6);
    } else if (type != 'P') {
      kept.append(fields.substr(0, end + 1));
    }
    fields.remove_prefix(end + 1);
  }
  kept += '\0';
  if (first && !r.error_code)
    r.error_code = "XX000"; // a server error without a code: still an error
  out += 'E';
  append_be32(out, static_cast<uint32_t>(kept.size() + 4));
  out += kept;
}

} // namespace

relayed relay_messages(std::string_view in, uint32_t max_message) {
  relayed r;
  r.messages.reserve(in.size());
  size_t pos = 0;
  while (in.size() - pos >= 5) {
    auto type = in[pos];
    auto length = be32(in.data() + pos + 1);
    if (length < 4 || length > max_message) {
      r.fault = "a malformed message from the server";
      break;
    }
    if (in.size() - pos < 1 + size_t{length}) {
      r.need = 1 + size_t{length};
      break;
    }
    auto message = in.substr(pos, 1 + size_t{length});
    auto body = message.substr(5);
    pos += message.size();
    if (type == 'Z') {
      r.ready = body.empty() ? 'I' : body[0];
      r.trailing = pos < in.size();
      break;
    }
    if (type == 'G' || type == 'H' || type == 'W') { // COPY in, out, both
      r.fault = "COPY is not supported through QueryFlux";
      break;
    }
    if (type == 'E') {
      read_error(body, r, r.messages);
    } else {
      if (type == 'D')
        ++r.data_rows;
      r.messages.append(message);
    }
  }
  r.consumed = r.fault ? 0 : pos;
  if (r.fault)
    r.messages.clear();
  return r;
}

} // namespace qf::pgwire
