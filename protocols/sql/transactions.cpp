#include "protocols/sql/transactions.hpp"

#include "protocols/sql/statements.hpp"

#include <string>

namespace qf::sql {

transaction_effect transaction_effect_of(std::string_view statement) {
  return transaction_effect_of(statement, leading_keyword(statement));
}

transaction_effect transaction_effect_of(std::string_view statement,
                                         std::string_view first) {
  if (first == "BEGIN")
    return transaction_effect::opens;
  if (first != "START" && first != "PREPARE" && first != "COMMIT" && first != "END"
      && first != "ROLLBACK" && first != "ABORT")
    return transaction_effect::none;
  // Seven words reach past "ROLLBACK WORK AND NO CHAIN" and "ROLLBACK
  // TRANSACTION TO SAVEPOINT".
  auto words = leading_keywords(statement, 7);
  std::string_view rest{words};
  if (first == "START")
    return rest.starts_with("START TRANSACTION") ? transaction_effect::opens // not START SLAVE
                                                 : transaction_effect::none;
  if (first == "PREPARE") // PREPARE TRANSACTION: the block leaves the session
    return rest.starts_with("PREPARE TRANSACTION") ? transaction_effect::ends
                                                   : transaction_effect::none;
  rest.remove_prefix(first.size());
  for (std::string_view noise : {" WORK", " TRANSACTION"})
    if (rest.starts_with(noise))
      rest.remove_prefix(noise.size());
  if (rest == " TO" || rest.starts_with(" TO "))
    return transaction_effect::none; // ROLLBACK TO SAVEPOINT
  if (rest == " PREPARED" || rest.starts_with(" PREPARED "))
    return transaction_effect::none; // a two-phase one's, not the session's block
  if (rest.ends_with("AND CHAIN") && !rest.ends_with("AND NO CHAIN"))
    return transaction_effect::none; // a new block starts at once
  return transaction_effect::ends;
}

transaction_step transaction_step_of(std::string_view statement, bool block_open) {
  return transaction_step_of(statement, leading_keyword(statement), block_open);
}

transaction_step transaction_step_of(std::string_view statement,
                                     std::string_view leading_keyword, bool block_open) {
  auto effect = transaction_effect_of(statement, leading_keyword);
  if (!block_open)
    return effect == transaction_effect::opens ? transaction_step::begin
                                               : transaction_step::none;
  return effect == transaction_effect::ends ? transaction_step::end
                                            : transaction_step::inside;
}

} // namespace qf::sql
