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

std::string lower(std::string_view s) {
  std::string out{s};
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())))
    s.remove_prefix(1);
  while (!s.empty() && (std::isspace(static_cast<unsigned char>(s.back())) || s.back() == ';'))
    s.remove_suffix(1);
  return s;
}

/// The default a SET SESSION CHARACTERISTICS AS TRANSACTION sets (pgjdbc's
/// setTransactionIsolation sends one), when it sets one only.
std::string characteristic(std::string_view rest) {
  if (next_word(rest) != "as" || next_word(rest) != "transaction")
    return {};
  auto modes = lower(rest);
  bool isolation = modes.find("isolation") != std::string::npos;
  bool read = modes.find("read only") != std::string::npos
              || modes.find("read write") != std::string::npos;
  bool deferrable = modes.find("deferrable") != std::string::npos;
  if (isolation + read + deferrable != 1 || modes.find(',') != std::string::npos)
    return {};
  return isolation ? "default_transaction_isolation"
         : read    ? "default_transaction_read_only"
                   : "default_transaction_deferrable";
}

using entry_list = std::vector<std::pair<std::string, std::string>>;

bool has(const entry_list& entries, const std::string& name) {
  return std::any_of(entries.begin(), entries.end(),
                     [&](const auto& e) { return e.first == name; });
}

/// Not on `from` as it is here: to be given.
bool differs(const std::pair<std::string, std::string>& entry, const entry_list& from) {
  return std::find(from.begin(), from.end(), entry) == from.end();
}

} // namespace

std::vector<std::string_view> mysql_assignments(std::string_view body) {
  std::vector<std::string_view> out;
  size_t start = 0;
  int depth = 0;
  for (size_t i = 0; i < body.size(); ++i) {
    char c = body[i];
    if (c == '\'' || c == '"' || c == '`') {
      for (++i; i < body.size() && body[i] != c; ++i)
        if (body[i] == '\\')
          ++i;
    } else if (c == '(') {
      ++depth;
    } else if (c == ')') {
      --depth;
    } else if (c == ',' && depth == 0) {
      out.push_back(trim(body.substr(start, i - start)));
      start = i + 1;
    }
  }
  out.push_back(trim(body.substr(start)));
  return out;
}

std::pair<std::string, std::string_view> mysql_assignment(std::string_view item) {
  auto eq = item.find('=');
  if (eq == std::string_view::npos || eq == 0)
    return {};
  auto target = trim(item.substr(0, eq));
  if (!target.empty() && target.back() == ':') // :=
    target = trim(target.substr(0, target.size() - 1));
  auto name = lower(target);
  for (std::string_view prefix : {"session ", "local ", "@@session.", "@@local.", "@@"})
    if (name.rfind(prefix, 0) == 0)
      name = std::string{trim(std::string_view{name}.substr(prefix.size()))};
  return {name, trim(item.substr(eq + 1))};
}

std::optional<std::string> mysql_used_database(std::string_view statement) {
  if (leading_keyword(statement) != "USE")
    return std::nullopt;
  auto rest = after_leading_keyword(statement);
  while (!rest.empty() && (rest.back() == ';' || std::isspace(static_cast<unsigned char>(rest.back()))))
    rest.remove_suffix(1);
  if (rest.empty())
    return std::nullopt;
  if (rest.front() != '`') // a plain name: one word
    return rest.find_first_of(" \t\r\n") == std::string_view::npos
             ? std::optional<std::string>{std::string{rest}}
             : std::nullopt;
  std::string name;
  for (size_t i = 1; i < rest.size(); ++i) {
    if (rest[i] != '`') {
      name += rest[i];
    } else if (i + 1 < rest.size() && rest[i + 1] == '`') {
      name += '`';
      ++i;
    } else {
      return i + 1 == rest.size() && !name.empty() ? std::optional<std::string>{name}
                                                   : std::nullopt;
    }
  }
  return std::nullopt; // unterminated
}

std::string mysql_use(std::string_view database) {
  return "USE " + quoted(database, '`');
}

bool mysql_variables::replayable(std::string_view statement) {
  if (mysql_used_database(statement))
    return true;
  if (leading_keyword(statement) != "SET")
    return false;
  auto items = mysql_assignments(after_leading_keyword(statement));
  return std::all_of(items.begin(), items.end(), [](auto item) {
    auto [name, value] = mysql_assignment(item);
    // A value reading a variable would read the connection's on replay.
    return !name.empty()
           && std::all_of(name.begin(), name.end(),
                          [](unsigned char c) { return std::isalnum(c) || c == '_'; })
           && !value.empty() && value.find('@') == std::string_view::npos;
  });
}

void mysql_variables::start_with(std::string name, std::string_view value) {
  auto text = name + " = " + std::string{value};
  auto same = std::find_if(entries_.begin(), entries_.end(), [&](const auto& e) { return e.first == name; });
  if (same != entries_.end())
    same->second = std::move(text);
  else
    entries_.emplace_back(std::move(name), std::move(text));
}

void mysql_variables::apply(std::string_view statement) {
  if (auto database = mysql_used_database(statement)) {
    database_ = std::move(*database);
    return;
  }
  if (!replayable(statement))
    return;
  for (auto item : mysql_assignments(after_leading_keyword(statement))) {
    auto [name, value] = mysql_assignment(item);
    start_with(std::move(name), value);
  }
}

mysql_variables mysql_variables::after_prelude(const mysql_variables& from) const {
  if (database_ != from.database_ && !database_.empty()) { // the USE went first
    auto now = from;
    now.database_ = database_;
    return now;
  }
  auto now = *this;
  now.database_ = from.database_; // none named: whichever it has stays
  return now;
}

std::string mysql_variables::prelude_from(const mysql_variables& from) const {
  if (database_ != from.database_ && !database_.empty())
    return mysql_use(database_); // a statement of its own: the SET follows
  std::string out;
  auto add = [&](std::string_view assignment) {
    out += out.empty() ? "SET " : ", ";
    out += assignment;
  };
  for (const auto& entry : from.entries_)
    if (!has(entries_, entry.first))
      add(entry.first + " = DEFAULT");
  for (const auto& entry : entries_)
    if (differs(entry, from.entries_))
      add(entry.second);
  return out;
}

std::string replayable_setting(std::string_view statement) {
  auto keyword = leading_keyword(statement);
  if (keyword != "SET" && keyword != "RESET")
    return {};
  auto rest = after_leading_keyword(statement);
  auto word = next_word(rest);
  if (word == "session") {
    word = next_word(rest);
    if (word == "authorization")
      return {};
    if (word == "characteristics")
      return keyword == "SET" ? characteristic(rest) : std::string{};
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

std::vector<std::pair<std::string, std::string>>
startup_settings(const std::map<std::string, std::string>& params) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [name, value] : params) {
    auto key = lower(name);
    if (key == "user" || key == "database" || key == "replication" || key == "application_name"
        || key == "client_encoding" || key.rfind("_pq_.", 0) == 0)
      continue;
    if (key != "options") {
      out.emplace_back(key, value);
      continue;
    }
    // Words split at unescaped spaces: -c name=value, or --name=value.
    std::vector<std::string> words(1);
    for (size_t i = 0; i < value.size(); ++i) {
      if (value[i] == '\\' && i + 1 < value.size())
        words.back() += value[++i];
      else if (value[i] == ' ')
        words.emplace_back();
      else
        words.back() += value[i];
    }
    for (size_t i = 0; i < words.size(); ++i) {
      std::string_view option = words[i];
      if (option == "-c" && i + 1 < words.size())
        option = words[++i];
      else if (option.rfind("--", 0) == 0)
        option.remove_prefix(2);
      else
        continue;
      auto eq = option.find('=');
      if (eq != std::string_view::npos && eq > 0)
        out.emplace_back(lower(option.substr(0, eq)), std::string{option.substr(eq + 1)});
    }
  }
  return out;
}

void session_settings::start_with(std::string_view name, std::string_view value) {
  std::string key{name};
  std::erase_if(startup_, [&](const auto& e) { return e.first == key; });
  startup_.emplace_back(key, "SELECT pg_catalog.set_config(" + quoted(name) + ", "
                               + quoted(value) + ", false)");
  entries_ = startup_;
}

void session_settings::apply_on_server(std::string_view statement) {
  auto startup = std::exchange(startup_, {});
  apply(statement);
  startup_ = std::move(startup);
}

void session_settings::apply(std::string_view statement) {
  auto name = replayable_setting(statement);
  if (name.empty())
    return;
  if (leading_keyword(statement) == "RESET") { // to the value the session started with
    if (name == "all") {
      entries_ = startup_;
      return;
    }
    std::erase_if(entries_, [&](const auto& e) { return e.first == name; });
    for (const auto& start : startup_)
      if (start.first == name)
        entries_.push_back(start);
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
  // The role first back to the connection's own and last to the client's:
  // what is set in between may need the privileges of the former.
  bool role_changes = std::any_of(entries_.begin(), entries_.end(),
                                  [&](const auto& e) {
                                    return e.first == "role" && differs(e, from.entries_);
                                  })
                      || (has(from.entries_, "role") && !has(entries_, "role"));
  if (role_changes && has(from.entries_, "role"))
    add("RESET role");
  for (const auto& entry : from.entries_)
    if (entry.first != "role" && !has(entries_, entry.first))
      add(reset_of(entry.first));
  for (const auto& entry : entries_)
    if (entry.first != "role" && differs(entry, from.entries_))
      add(entry.second);
  for (const auto& entry : entries_)
    if (entry.first == "role" && role_changes)
      add(entry.second);
  return out;
}

} // namespace qf::sql
