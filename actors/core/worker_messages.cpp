#include "actors/core/worker_messages.hpp"

namespace qf {

std::string_view to_string(config_source s) {
  switch (s) {
    case config_source::none:
      return "none";
    case config_source::file:
      return "file";
    case config_source::control_plane:
      return "controlPlane";
    case config_source::peer:
      return "peer";
  }
  return "none";
}

} // namespace qf
