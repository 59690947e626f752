// JSON lines need the message escaped, which spdlog's patterns cannot do:
// a custom flag writes it.
#include "net/logging.hpp"

#include "protocols/common/json_writer.hpp"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace qf::logging {

namespace {

class json_message_flag : public spdlog::custom_flag_formatter {
public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    std::string escaped;
    json_text::append_string(escaped, std::string_view{msg.payload.data(),
                                                       msg.payload.size()});
    dest.append(escaped.data(), escaped.data() + escaped.size());
  }

  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<json_message_flag>();
  }
};

} // namespace

bool setup(const std::string& level, const std::string& format) {
  auto lvl = spdlog::level::from_str(level);
  if (lvl == spdlog::level::off && level != "off")
    return false;
  auto logger = spdlog::stderr_color_mt("queryflux");
  spdlog::set_default_logger(logger);
  spdlog::set_level(lvl);
  if (format == "json") {
    auto f = std::make_unique<spdlog::pattern_formatter>();
    f->add_flag<json_message_flag>('*').set_pattern(
      R"({"time":"%Y-%m-%dT%H:%M:%S.%e%z","level":"%l","thread":%t,"msg":%*})");
    spdlog::set_formatter(std::move(f));
  } else if (format == "text") {
    spdlog::set_pattern("%Y-%m-%d %H:%M:%S.%e %^%-5l%$ %v");
  } else {
    return false;
  }
  return true;
}

} // namespace qf::logging
