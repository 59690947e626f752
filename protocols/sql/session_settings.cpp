#include "protocols/sql/session_settings.hpp"

#include "protocols/sql/statements.hpp"

#include <algorithm>
#include <cctype>

namespace qf::sql {

namespace {

/// The next word of `rest` (which it moves past): lowercased, or as
/// written between double quotes; "" when none starts there.
std::string next_word(std::string_view& rest) {
  while (!rest.empty() && std::isspace(static_cast<unsigned char>(rest.front())))
    rest.remove_prefix(1);
  if (!rest.empty() && rest.front() == '"') {
    auto end = rest.find('"', 1);
    if (end == std::string_view::npos)
      return {};
    std::string word{rest.substr(1, end - 1)};
    rest.remove_prefix(end + 1);
    return word;
  }
  size_t n = 0;
  while (n < rest.size()
         && (std::isalnum(static_cast<unsigned char>(rest[n])) || rest[n] == '_'
             || rest[n] == '.' || rest[n] == '$'))
    ++n;
  std::string word{rest.substr(0, n)};
  rest.remove_prefix(n);
  std::transform(word.begin(), word.end(), word.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return word;
}

/// How RESET names a setting: quoted when lowercase would change it.
std::string reset_of(const std::string& name) {
  bool plain = std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::islower(c) || std::isdigit(c) || c == '_' || c == '.';
  });
  return "RESET " + (plain ? name : '"' + name + '"');
}

} // namespace

std::string replayable_setting(std::string_view statement) {
  auto keyword = leading_keyword(statement);
  if (keyword != "SET" && keyword != "RESET")
    return {};
  auto rest = after_leading_keyword(statement);
  auto word = next_word(rest);
  if (word == "session") {
    word = next_word(rest);
    if (word == "authorization" || word == "characteristics")
      return {};
  }
  if (word == "time") // TIME ZONE
    return next_word(rest) == "zone" ? "timezone" : std::string{};
  if (keyword == "SET") {
    if (word == "local" || word == "transaction" || word == "constraints")
      return {};
    if (word == "schema")
      return "search_path";
    if (word == "names")
      return "client_encoding";
  }
  return word;
}

void session_settings::apply(std::string_view statement) {
  auto name = replayable_setting(statement);
  if (name.empty())
    return;
  if (leading_keyword(statement) == "RESET") {
    if (name == "all")
      entries_.clear();
    else
      std::erase_if(entries_, [&](const auto& e) { return e.first == name; });
    return;
  }
  for (auto& [key, set] : entries_)
    if (key == name) {
      set.assign(statement);
      return;
    }
  entries_.emplace_back(std::move(name), std::string{statement});
}

std::string session_settings::prelude_from(const session_settings& from) const {
  // A newline before each separator: a statement's trailing -- comment
  // must not swallow the next one.
  std::string out;
  auto add = [&](std::string_view statement) {
    if (!out.empty())
      out += "\n;\n";
    out += statement;
  };
  auto differs = [&](const auto& entry) {
    return std::find(from.entries_.begin(), from.entries_.end(), entry) == from.entries_.end();
  };
  auto has = [](const auto& entries, const std::string& name) {
    return std::any_of(entries.begin(), entries.end(),
                       [&](const auto& e) { return e.first == name; });
  };
  // The role first back to the connection's own and last to the client's:
  // what is set in between may need the privileges of the former.
  bool role_changes = std::any_of(entries_.begin(), entries_.end(),
                                  [&](const auto& e) { return e.first == "role" && differs(e); })
                      || (has(from.entries_, "role") && !has(entries_, "role"));
  if (role_changes && has(from.entries_, "role"))
    add("RESET role");
  for (const auto& [name, set] : from.entries_)
    if (name != "role" && !has(entries_, name))
      add(reset_of(name));
  for (const auto& entry : entries_)
    if (entry.first != "role" && differs(entry))
      add(entry.second);
  for (const auto& entry : entries_)
    if (entry.first == "role" && role_changes)
      add(entry.second);
  return out;
}

} // namespace qf::sql
