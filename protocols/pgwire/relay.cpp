#include "protocols/pgwire/relay.hpp"

#include "protocols/common/byte_reader.hpp"
#include "protocols/pgwire/frontend.hpp"

#include <charconv>

namespace qf::pgwire {

using byte_writer::put_be_u32;

namespace {

/// An ErrorResponse body into its code and message, and rewritten into out
/// (unless dropped) with its position counted in the client's text: the
/// statement the server saw starts `shift` characters into it.
void read_error(std::string_view fields, relayed& r, std::string& out, bool drop, int32_t shift) {
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
    } else if (type == 'P' && shift != 0) {
      int64_t at = 0;
      auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), at);
      if (ec == std::errc{} && ptr == value.data() + value.size()) {
        kept += 'P';
        kept += std::to_string(at + shift);
        kept += '\0';
      }
    } else {
      kept.append(fields.substr(0, end + 1));
    }
    fields.remove_prefix(end + 1);
  }
  kept += '\0';
  if (first && !r.error_code)
    r.error_code = "XX000"; // a server error without a code: still an error
  if (drop)
    return;
  out += 'E';
  put_be_u32(out, static_cast<uint32_t>(kept.size() + 4));
  out += kept;
}

} // namespace

void query_message(std::string& out, std::string_view sql) {
  out += 'Q';
  put_be_u32(out, static_cast<uint32_t>(4 + sql.size() + 1));
  out += sql;
  out += '\0';
}

namespace {

/// A message of the given tag: its length is written once the body is.
class message_writer {
public:
  message_writer(std::string& out, char tag) : out_(out) {
    out_ += tag;
    at_ = out_.size();
    put_be_u32(out_, 0);
  }
  ~message_writer() {
    auto length = static_cast<uint32_t>(out_.size() - at_);
    for (int i = 0; i < 4; ++i)
      out_[at_ + i] = static_cast<char>((length >> (24 - 8 * i)) & 0xff);
  }
  message_writer(const message_writer&) = delete;
  message_writer& operator=(const message_writer&) = delete;

private:
  std::string& out_;
  size_t at_;
};

} // namespace

namespace {

/// Parse of `name` with the client's declared types (0: the server infers
/// it), as it parsed them: `$1 + $2` of two int4 is not ambiguous then.
void parse_message(std::string& out, std::string_view name, std::string_view sql,
                   const std::vector<uint32_t>& param_types) {
  message_writer parse{out, 'P'};
  out += name;
  out += '\0';
  out += sql;
  out += '\0';
  byte_writer::put_be_u16(out, static_cast<uint16_t>(param_types.size()));
  for (auto oid : param_types)
    put_be_u32(out, oid);
}

} // namespace

void describe_statement_messages(std::string& out, std::string_view sql,
                                 const std::vector<uint32_t>& param_types) {
  parse_message(out, "", sql, param_types);
  {
    message_writer d{out, 'D'};
    out += 'S';
    out += '\0';
  }
  message_writer sync{out, 'S'};
}

std::optional<std::vector<uint32_t>> parameter_types_of(std::string_view messages) {
  byte_reader in{messages};
  while (in.remaining() >= 5) {
    auto tag = *in.u8();
    auto length = *in.be_u32();
    if (length < 4 || length - 4 > in.remaining())
      return std::nullopt;
    auto body = in.bytes(length - 4);
    if (tag != 't')
      continue;
    byte_reader fields{*body};
    auto count = fields.be_u16();
    if (!count || fields.remaining() != size_t{*count} * 4)
      return std::nullopt;
    std::vector<uint32_t> types(*count);
    for (auto& t : types)
      t = *fields.be_u32();
    return types;
  }
  return std::nullopt;
}

void extended_messages(std::string& out, std::string_view sql,
                       const std::vector<std::optional<std::string>>& params,
                       const std::vector<uint32_t>& param_types,
                       const std::vector<int16_t>& result_formats, bool describe,
                       statement_ref statement) {
  if (statement.parse)
    parse_message(out, statement.name, sql, param_types);
  {
    message_writer bind{out, 'B'};
    out += '\0'; // the unnamed portal
    out += statement.name;
    out += '\0';
    byte_writer::put_be_u16(out, 0); // every parameter as text
    byte_writer::put_be_u16(out, static_cast<uint16_t>(params.size()));
    for (const auto& p : params) {
      if (!p) {
        put_be_u32(out, 0xFFFFFFFF); // -1: NULL
        continue;
      }
      put_be_u32(out, static_cast<uint32_t>(p->size()));
      out += *p;
    }
    byte_writer::put_be_u16(out, static_cast<uint16_t>(result_formats.size()));
    for (auto f : result_formats)
      byte_writer::put_be_u16(out, static_cast<uint16_t>(f));
  }
  if (describe) {
    message_writer d{out, 'D'};
    out += 'P';
    out += '\0';
  }
  {
    message_writer execute{out, 'E'};
    out += '\0';
    put_be_u32(out, 0); // no row limit
  }
  message_writer sync{out, 'S'};
}

void close_statement_message(std::string& out, std::string_view name) {
  message_writer close{out, 'C'};
  out += 'S';
  out += name;
  out += '\0';
}

void copy_fail_message(std::string& out, std::string_view why, bool then_sync) {
  {
    message_writer fail{out, 'f'};
    out += why;
    out += '\0';
  }
  if (then_sync) {
    message_writer sync{out, 'S'};
  }
}

relayed relay_messages(std::string_view in, uint32_t max_message) {
  relayed r;
  relay_messages(in, r, max_message);
  return r;
}

void relay_messages(std::string_view in, relayed& r, uint32_t max_message,
                    server_errors errors, int32_t position_shift) {
  std::string messages = std::move(r.messages); // its buffer, kept
  r = relayed{};
  r.messages = std::move(messages);
  r.messages.clear();
  r.messages.reserve(in.size());
  size_t pos = 0;
  // Server messages are framed as the client's are, past startup.
  frame f;
  for (;;) {
    auto next = next_frame(in.substr(pos), false, max_message, f);
    if (next.status == decode_status::need_more) {
      r.need = next.needed;
      break;
    }
    if (next.status == decode_status::error) {
      r.fault = "a malformed message from the server";
      break;
    }
    auto whole = in.substr(pos, next.consumed);
    pos += next.consumed;
    if (f.tag == 'Z') {
      r.ready = f.body.empty() ? 'I' : f.body[0];
      r.trailing = pos < in.size();
      break;
    }
    if (f.tag == 'G') { // the server waits for the client's data
      r.copy_in = true;
      r.copy_in_response = whole;
      break;
    }
    if (f.tag == 'W') {
      r.fault = "replication (COPY BOTH) is not supported through QueryFlux";
      break;
    }
    if (f.tag == '1' || f.tag == '2' || f.tag == '3') { // ours, or answered already
      r.parse_complete = r.parse_complete || f.tag == '1';
      continue;
    }
    if (f.tag == 'A') { // a notification: for a listener the pooled connection no longer serves
      r.notified = true;
      continue;
    }
    if (f.tag == 'E') {
      read_error(f.body, r, r.messages, errors == server_errors::dropped, position_shift);
    } else {
      if (f.tag == 'S')
        r.setting_changed = true;
      if (f.tag == 'D' || f.tag == 'd') // a row, or a line of COPY TO STDOUT
        ++r.data_rows;
      r.messages.append(whole);
    }
  }
  r.consumed = r.fault ? 0 : pos;
  if (r.fault)
    r.messages.clear();
}

} // namespace qf::pgwire
