// Error construction and inspection for the "qf" category.
#include "actors/core/messages.hpp"

#include <caf/make_message.hpp>

namespace qf {

namespace {

constexpr auto category = caf::atom("qf");

} // namespace

caf::error make_error(errc code, std::string message) {
  return caf::error{static_cast<uint8_t>(code), category,
                    caf::make_message(std::move(message))};
}

caf::error make_error(errc code, std::string message, std::string sqlstate,
                      int32_t vendor_code) {
  return caf::error{static_cast<uint8_t>(code), category,
                    caf::make_message(std::move(message), std::move(sqlstate),
                                      vendor_code)};
}

std::string sqlstate_of(const caf::error& err) {
  const auto& ctx = err.context();
  if (ctx.match_elements<std::string, std::string, int32_t>())
    return ctx.get_as<std::string>(1);
  return {};
}

int32_t vendor_code_of(const caf::error& err) {
  const auto& ctx = err.context();
  if (ctx.match_elements<std::string, std::string, int32_t>())
    return ctx.get_as<int32_t>(2);
  return 0;
}

std::optional<errc> code_of(const caf::error& err) {
  if (err.category() != category)
    return std::nullopt;
  return static_cast<errc>(err.code());
}

std::string message_of(const caf::error& err) {
  const auto& ctx = err.context();
  if (ctx.match_elements<std::string>() || ctx.match_elements<std::string, std::string>()
      || ctx.match_elements<std::string, std::string, int32_t>())
    return ctx.get_as<std::string>(0);
  return caf::to_string(err);
}

errc from_engine(engines::error_kind kind) {
  switch (kind) {
    case engines::error_kind::syntax:
      return errc::engine_syntax;
    case engines::error_kind::user:
      return errc::engine_user;
    case engines::error_kind::cancelled:
      return errc::cancelled;
    case engines::error_kind::internal:
      return errc::engine_internal;
  }
  return errc::engine_internal;
}

int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
           std::chrono::system_clock::now().time_since_epoch())
    .count();
}

int64_t ms_between(std::chrono::steady_clock::time_point from,
                   std::chrono::steady_clock::time_point to) {
  using point = std::chrono::steady_clock::time_point;
  if (from == point{} || to == point{})
    return 0;
  return std::chrono::duration_cast<std::chrono::milliseconds>(to - from).count();
}

} // namespace qf
