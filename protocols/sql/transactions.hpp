// What a statement does to a transaction block, read from its words alone:
// enough for a session to know when a backend connection must stay with it.
#pragma once

#include <string_view>

namespace qf::sql {

/// Where a statement stands in a transaction block.
enum class transaction_step {
  none,   // autocommit: any pooled connection
  begin,  // opens a block: keep the connection afterwards
  inside, // runs on the block's connection, which stays pinned
  end,    // COMMIT or ROLLBACK: the connection goes back to the pool
};

enum class transaction_effect {
  none,  // neither opens nor ends a block
  opens, // BEGIN, START TRANSACTION
  ends,  // COMMIT, END, ROLLBACK, ABORT, PREPARE TRANSACTION
};

/// ROLLBACK TO [SAVEPOINT] and COMMIT/ROLLBACK ... AND CHAIN end nothing:
/// the block goes on, so its connection must stay.
transaction_effect transaction_effect_of(std::string_view statement);
/// The same, given the statement's leading_keyword() already read: most
/// statements are told by it alone, at no further cost.
transaction_effect transaction_effect_of(std::string_view statement,
                                         std::string_view leading_keyword);

/// The step a statement takes, given whether a block is open.
transaction_step transaction_step_of(std::string_view statement, bool block_open);
transaction_step transaction_step_of(std::string_view statement,
                                     std::string_view leading_keyword, bool block_open);

} // namespace qf::sql
