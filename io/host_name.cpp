#include "io/host_name.hpp"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

namespace qf::io {

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0)
    return {};
  return name;
}

std::string canonical_host_name() {
  auto name = host_name();
  if (name.empty())
    return name;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_CANONNAME;
  addrinfo* found = nullptr;
  if (::getaddrinfo(name.c_str(), nullptr, &hints, &found) != 0 || !found)
    return name;
  std::string canonical = found->ai_canonname ? found->ai_canonname : "";
  ::freeaddrinfo(found);
  return canonical.empty() ? name : canonical;
}

} // namespace qf::io
