// A PostgreSQL server's answer to a simple Query, read for relaying to a
// PostgreSQL client as it is: the whole messages up to ReadyForQuery, the
// DataRows (and COPY TO STDOUT's CopyData) counted, the first error read,
// error positions dropped (they count in the statement the server saw, not
// in the client's Query, which may hold several) and FATAL errors told as
// ERROR (the server's session ended; the client's goes on). Pure: bytes
// in, bytes and facts out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qf::pgwire {

struct relayed {
  /// For the client: whole messages, ReadyForQuery, ParseComplete,
  /// BindComplete and CloseComplete excluded.
  std::string messages;
  /// Input bytes taken: whole messages, through ReadyForQuery if it came.
  size_t consumed = 0;
  int64_t data_rows = 0;
  /// The first ErrorResponse's SQLSTATE and message, if one came.
  std::optional<std::string> error_code;
  std::string error_message;
  /// ReadyForQuery's transaction status ('I', 'T', 'E'): the answer ended.
  std::optional<char> ready;
  /// A ParseComplete came: the statement parsed was prepared.
  bool parse_complete = false;
  /// Bytes arrived after ReadyForQuery (a notification).
  bool trailing = false;
  /// A NotificationResponse came, and was not relayed: the connection
  /// listens on behalf of nobody here (see server_session's LISTEN).
  bool notified = false;
  /// A ParameterStatus came (relayed): the statement changed a reported
  /// setting of the server's session (set_config('TimeZone', ...)), which
  /// the next client on the connection must not inherit.
  bool setting_changed = false;
  /// The server waits for COPY FROM STDIN's data: its CopyInResponse
  /// (nothing follows it) is not among `messages` but here, a view of the
  /// input. The caller relays it and the client's data, or refuses the
  /// copy with copy_fail_message().
  bool copy_in = false;
  std::string_view copy_in_response;
  /// The server sent what cannot be relayed: a malformed or oversized
  /// message, or the start of a replication stream (CopyBothResponse).
  /// The connection is done for.
  const char* fault = nullptr;
  /// A message is incomplete: the buffer must hold this many bytes
  /// (from the first unconsumed byte) before it can be read.
  size_t need = 0;
};

/// Appends the simple Query message that sends `sql` to the server.
void query_message(std::string& out, std::string_view sql);

/// The server statement an Execute runs: the unnamed one, parsed in the
/// same batch, or one of ours (server_statements), parsed only when the
/// server does not hold it yet.
struct statement_ref {
  std::string_view name;
  bool parse = true;
};

/// Appends one statement in the extended protocol: Parse (unless the
/// server holds the statement) and Bind of the statement into the unnamed
/// portal (parameters as text, NULL when empty, their types left to the
/// server), Describe of the portal if `describe`, Execute without a row
/// limit, and Sync. The server's ParseComplete, BindComplete and
/// CloseComplete are dropped by relay_messages(); the rest is what a
/// client that bound and executed a portal reads.
void extended_messages(std::string& out, std::string_view sql,
                       const std::vector<std::optional<std::string>>& params,
                       const std::vector<uint32_t>& param_types,
                       const std::vector<int16_t>& result_formats, bool describe,
                       statement_ref statement = {});

/// Appends what asks the server to describe a statement as a client's
/// Describe of it would: Parse of the unnamed statement with the client's
/// declared types (0: the server infers it), Describe of it, and Sync. The
/// server answers ParseComplete (dropped by relay_messages()),
/// ParameterDescription and RowDescription or NoData, or an ErrorResponse.
void describe_statement_messages(std::string& out, std::string_view sql,
                                 const std::vector<uint32_t>& param_types);

/// The types of a ParameterDescription among these whole server messages.
std::optional<std::vector<uint32_t>> parameter_types_of(std::string_view messages);

/// Appends a Close of the named server statement (the server answers
/// CloseComplete, also when it has no such statement).
void close_statement_message(std::string& out, std::string_view name);

/// Appends CopyFail: the server ends the COPY FROM STDIN with an error
/// and the connection stays fit for the next statement. After an extended
/// batch the server waits for a Sync as well (it ignored the batch's own
/// while it waited for the copy's data).
void copy_fail_message(std::string& out, std::string_view why, bool then_sync);

/// The largest server message read: PostgreSQL's largest value (1 GB)
/// with room for its headers.
inline constexpr uint32_t default_max_message = (1u << 30) + 1024;

/// What the relay does with the server's ErrorResponses.
enum class server_errors { relayed, dropped };

/// Reads `in` as server messages. Dropped errors are still read into
/// error_code and error_message, but not relayed (the caller told the
/// client its own).
relayed relay_messages(std::string_view in, uint32_t max_message = default_max_message);
/// The same into `out`, whose buffers are reused (per answer, no allocation).
/// position_shift: where the statement the server saw starts in the
/// client's text, in characters (a statement of a multi-statement Query):
/// an error's position is moved by it, so that psql marks the right spot.
void relay_messages(std::string_view in, relayed& out,
                    uint32_t max_message = default_max_message,
                    server_errors errors = server_errors::relayed, int32_t position_shift = 0);

} // namespace qf::pgwire
