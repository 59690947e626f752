#include "actors/control/migrator.hpp"

#include "actors/control/database_url.hpp"
#include "migrations/embedded.hpp"
#include "protocols/common/hex.hpp"

#include <openssl/sha.h>
#include <pqxx/pqxx>

#include <map>

namespace qf::migrator {

namespace {

/// Any constant: the key of the advisory lock all QueryFlux processes take.
constexpr long long lock_key = 0x51467846'6d696772; // "QFxFmigr"

const char* ledger_ddl = R"(
  CREATE TABLE IF NOT EXISTS queryflux_schema_history (
    version    INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    checksum   TEXT NOT NULL,
    applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
  ))";

void run(pqxx::connection& c, const std::string& sql) {
  pqxx::nontransaction tx{c};
  tx.exec(sql);
  tx.commit();
}

std::string checksum(std::string_view sql) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(sql.data()), sql.size(), digest);
  return to_hex({reinterpret_cast<const char*>(digest), sizeof digest});
}

/// version -> checksum, as the ledger has them.
std::map<int, std::string> ledger(pqxx::connection& c) {
  pqxx::nontransaction tx{c};
  std::map<int, std::string> out;
  for (const auto& row : tx.exec("SELECT version, checksum FROM queryflux_schema_history"))
    out[row[0].as<int>()] = row[1].as<std::string>();
  tx.commit();
  return out;
}

/// Refuses a database newer than this binary, or one whose applied
/// migrations differ from ours.
void verify(const std::map<int, std::string>& applied) {
  const auto& known = migrations::all();
  if (!applied.empty() && applied.rbegin()->first > latest_version())
    throw migration_error(
      "the database is at migration V" + std::to_string(applied.rbegin()->first)
      + ", newer than this QueryFlux knows (V" + std::to_string(latest_version())
      + "); migrations are forward-only: run the newer QueryFlux, or restore "
        "the backup taken before the upgrade");
  for (const auto& [version, sum] : applied)
    if (version >= 1 && sum != checksum(known[static_cast<size_t>(version - 1)].sql))
      throw migration_error("migration V" + std::to_string(version)
                            + " in the database differs from this binary's: "
                              "the file was changed after it was applied");
}

int version_of(const std::map<int, std::string>& applied) {
  int v = 0;
  while (applied.count(v + 1))
    ++v;
  return v;
}

/// libpq's messages end in a newline; ours continue after them.
std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
    s.pop_back();
  return s;
}

template <class F>
auto guarded(const std::string& url, F f) {
  try {
    pqxx::connection c{with_timeouts(url, 0)}; // an index may take long
    return f(c);
  } catch (const migration_error&) {
    throw;
  } catch (const pqxx::sql_error& e) {
    throw migration_error("database error: " + trimmed(e.what())
                          + (e.query().empty() ? "" : " (while running a migration)"));
  } catch (const std::exception& e) {
    throw migration_error("cannot reach the database: " + trimmed(e.what()), true);
  }
}

} // namespace

int latest_version() {
  return static_cast<int>(migrations::all().size());
}

report migrate(const std::string& url, int target) {
  return guarded(url, [&](pqxx::connection& c) {
    run(c, "SELECT pg_advisory_lock(" + std::to_string(lock_key) + ")");
    run(c, ledger_ddl);
    auto applied = ledger(c); // read under the lock: nobody migrates meanwhile
    verify(applied);
    report out;
    for (const auto& m : migrations::all()) {
      if (m.version > target || applied.count(m.version))
        continue;
      pqxx::work tx{c};
      try {
        tx.exec(std::string{m.sql});
      } catch (const pqxx::sql_error& e) {
        throw migration_error("migration V" + std::to_string(m.version) + "__"
                              + std::string{m.name} + " failed: " + e.what());
      }
      tx.exec_params("INSERT INTO queryflux_schema_history (version, name, checksum) "
                     "VALUES ($1, $2, $3)",
                     m.version, std::string{m.name}, checksum(m.sql));
      tx.commit();
      applied[m.version] = checksum(m.sql);
      out.applied.push_back(m.version);
    }
    run(c, "SELECT pg_advisory_unlock(" + std::to_string(lock_key) + ")");
    out.version = version_of(applied);
    return out;
  });
}

report check(const std::string& url) {
  return guarded(url, [&](pqxx::connection& c) {
    pqxx::nontransaction tx{c};
    auto exists = tx.exec1("SELECT to_regclass('queryflux_schema_history') IS NOT NULL")[0].as<bool>();
    tx.commit();
    report out;
    if (!exists)
      return out;
    auto applied = ledger(c);
    verify(applied);
    out.version = version_of(applied);
    return out;
  });
}

} // namespace qf::migrator
