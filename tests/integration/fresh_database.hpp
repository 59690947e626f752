// A database of its own for each test, on the PostgreSQL server the test
// command starts (QF_PG_URL), dropped afterwards.
#pragma once

#include <gtest/gtest.h>
#include <pqxx/pqxx>

#include <cstdlib>
#include <random>
#include <string>

namespace qf::test_support {

inline std::string server_url() {
  auto* url = std::getenv("QF_PG_URL");
  return url ? url : "postgres://postgres@127.0.0.1:15432/postgres";
}

/// The server URL with its database replaced.
inline std::string url_of(const std::string& database) {
  auto base = server_url();
  return base.substr(0, base.rfind('/') + 1) + database;
}

class fresh_database : public ::testing::Test {
protected:
  void SetUp() override {
    name = "qf_test_" + std::to_string(std::random_device{}());
    admin("CREATE DATABASE " + name);
    url = url_of(name);
  }

  void TearDown() override {
    admin("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
  }

  static void admin(const std::string& sql) {
    pqxx::connection c{server_url()};
    pqxx::nontransaction tx{c};
    tx.exec(sql);
    tx.commit();
  }

  pqxx::result query(const std::string& sql) {
    pqxx::connection c{url};
    pqxx::work tx{c};
    auto r = tx.exec(sql);
    tx.commit();
    return r;
  }

  std::string name;
  std::string url;
};

} // namespace qf::test_support
