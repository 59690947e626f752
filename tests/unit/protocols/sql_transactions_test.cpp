#include "protocols/sql/transactions.hpp"

#include <gtest/gtest.h>

using namespace qf::sql;

namespace {

transaction_effect effect(std::string_view s) {
  return transaction_effect_of(s);
}

} // namespace

TEST(sql_transactions, blocks_open_with_begin_or_start_transaction) {
  EXPECT_EQ(effect("BEGIN"), transaction_effect::opens);
  EXPECT_EQ(effect("  begin work;"), transaction_effect::opens);
  EXPECT_EQ(effect("BEGIN ISOLATION LEVEL SERIALIZABLE"), transaction_effect::opens);
  EXPECT_EQ(effect("/* app */ START TRANSACTION READ ONLY"), transaction_effect::opens);
  EXPECT_EQ(effect("START SLAVE"), transaction_effect::none);
  EXPECT_EQ(effect("SELECT 1"), transaction_effect::none);
}

TEST(sql_transactions, commit_and_rollback_end_blocks) {
  for (auto s : {"COMMIT", "commit work", "END", "END TRANSACTION", "ROLLBACK", "ABORT",
                 "ROLLBACK WORK AND NO CHAIN", "PREPARE TRANSACTION 'x'"})
    EXPECT_EQ(effect(s), transaction_effect::ends) << s;
}

TEST(sql_transactions, savepoint_rollbacks_and_chains_keep_the_block_open) {
  for (auto s : {"ROLLBACK TO a", "rollback to savepoint a", "ROLLBACK WORK TO SAVEPOINT a",
                 "ROLLBACK TRANSACTION TO SAVEPOINT a", "COMMIT AND CHAIN",
                 "ROLLBACK WORK AND CHAIN", "SAVEPOINT a", "RELEASE SAVEPOINT a",
                 "COMMIT PREPARED 'x'", "rollback prepared 'x'"})
    EXPECT_EQ(effect(s), transaction_effect::none) << s;
}

TEST(sql_transactions, steps_follow_whether_a_block_is_open) {
  EXPECT_EQ(transaction_step_of("BEGIN", false), transaction_step::begin);
  EXPECT_EQ(transaction_step_of("SELECT 1", false), transaction_step::none);
  EXPECT_EQ(transaction_step_of("COMMIT", false), transaction_step::none);
  EXPECT_EQ(transaction_step_of("SELECT 1", true), transaction_step::inside);
  EXPECT_EQ(transaction_step_of("ROLLBACK TO a", true), transaction_step::inside);
  EXPECT_EQ(transaction_step_of("BEGIN", true), transaction_step::inside);
  EXPECT_EQ(transaction_step_of("ROLLBACK", true), transaction_step::end);
}
