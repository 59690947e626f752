// X-Trino-* header parsing.
#include "protocols/trino/client_session.hpp"

#include "protocols/common/hex.hpp"
#include "protocols/common/json_writer.hpp"

#include <cctype>

namespace qf::trino {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())))
    s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
    s.remove_suffix(1);
  return s;
}

template <class F>
void split(std::string_view s, char sep, F each) {
  while (!s.empty()) {
    auto pos = s.find(sep);
    auto item = trim(s.substr(0, pos));
    if (!item.empty())
      each(item);
    if (pos == std::string_view::npos)
      break;
    s.remove_prefix(pos + 1);
  }
}

/// query_tags values look like "team:bi,adhoc".
void add_query_tags(client_session& out, std::string_view value) {
  split(value, ',', [&](std::string_view tag) {
    auto colon = tag.find(':');
    if (colon == std::string_view::npos)
      out.tags[std::string{tag}] = std::nullopt;
    else
      out.tags[std::string{trim(tag.substr(0, colon))}]
        = std::string{trim(tag.substr(colon + 1))};
  });
}


} // namespace

std::string percent_decode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex_digit_value(s[i + 1]) >= 0 && hex_digit_value(s[i + 2]) >= 0) {
      out += static_cast<char>(hex_digit_value(s[i + 1]) * 16 + hex_digit_value(s[i + 2]));
      i += 2;
    } else if (s[i] == '+') {
      out += ' ';
    } else {
      out += s[i];
    }
  }
  return out;
}

client_session parse_client_session(
  const std::vector<std::pair<std::string, std::string>>& headers) {
  client_session out;
  for (const auto& [raw_name, value] : headers) {
    std::string name = raw_name;
    for (auto& c : name)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    out.headers[name] = value;
    if (name == "x-trino-user" || name == "x-presto-user") {
      out.user = value;
    } else if (name == "x-trino-catalog" || name == "x-presto-catalog") {
      out.catalog = value;
    } else if (name == "x-trino-schema" || name == "x-presto-schema") {
      out.schema = value;
    } else if (name == "x-trino-source" || name == "x-presto-source") {
      out.source = value;
    } else if (name == "x-trino-client-tags"
               || name == "x-presto-client-tags") {
      split(value, ',', [&](std::string_view tag) {
        out.tags.emplace(std::string{tag}, std::nullopt);
      });
    } else if (name == "x-trino-session" || name == "x-presto-session") {
      split(value, ',', [&](std::string_view kv) {
        auto eq = kv.find('=');
        if (eq == std::string_view::npos)
          return;
        auto key = std::string{trim(kv.substr(0, eq))};
        auto val = percent_decode(trim(kv.substr(eq + 1)));
        if (key == "query_tags" || key == "query_tag")
          add_query_tags(out, val);
        out.session_properties[key] = std::move(val);
      });
    } else if (name == "authorization") {
      std::string_view v = trim(value);
      auto scheme = v.substr(0, 6);
      if (v.size() > 6 && (scheme == "Basic " || scheme == "basic ")) {
        std::string decoded;
        if (json_text::base64_decode(trim(v.substr(6)), decoded)) {
          auto colon = decoded.find(':');
          out.basic_user = decoded.substr(0, colon);
          if (out.user.empty())
            out.user = out.basic_user;
          if (colon != std::string::npos) {
            out.password = decoded.substr(colon + 1);
            out.has_password = true;
          }
        }
      }
    }
  }
  // X-Trino-User wins over the Basic user; both name the same person.
  if (auto u = out.headers.find("x-trino-user"); u != out.headers.end())
    out.user = u->second;
  return out;
}

} // namespace qf::trino
