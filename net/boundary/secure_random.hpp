// Secrets strangers must not guess (cancel keys, login scrambles, nextUri
// slugs): OpenSSL's DRBG, seeded by the OS. Not std::random_device, which
// here is RDRAND or the like: on this VM about 20 us a call, and a MySQL
// scramble took twenty of them, which made connecting through the MySQL
// frontend cost 0.5 ms of CPU. Drawn a kilobyte at a time per thread:
// a RAND_bytes call costs about 4 us whatever its size (locks, parameter
// lookups, a fork check), a tenth of the gateway's CPU for a client that
// connects per statement.
#pragma once

#include "protocols/common/hex.hpp"

#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <pthread.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <stdexcept>
#include <string>

namespace qf::boundary {

namespace detail {

/// A thread's bytes of the DRBG's output not served yet.
struct random_pool {
  std::array<unsigned char, 1024> bytes;
  size_t served = 1024; // all of them: none drawn yet

  void drop() {
    OPENSSL_cleanse(bytes.data(), bytes.size());
    served = bytes.size();
  }
  ~random_pool() {
    drop();
  }
};

inline random_pool& this_threads_pool() {
  thread_local random_pool pool;
  return pool;
}

} // namespace detail

inline void random_bytes(void* out, size_t size) {
  // A forked child starts with its parent's unserved bytes: it drops them
  // (the child has only the forking thread), so that no two processes
  // ever hand out the same secret.
  [[maybe_unused]] static const bool forks_drop_the_pool =
    ::pthread_atfork(nullptr, nullptr, [] { detail::this_threads_pool().drop(); }) == 0;
  auto& drawn = detail::this_threads_pool();
  auto* to = static_cast<unsigned char*>(out);
  while (size > 0) {
    if (drawn.served == drawn.bytes.size()) {
      if (RAND_bytes(drawn.bytes.data(), static_cast<int>(drawn.bytes.size())) != 1)
        throw std::runtime_error("the random number generator failed");
      drawn.served = 0;
    }
    auto n = std::min(size, drawn.bytes.size() - drawn.served);
    std::memcpy(to, drawn.bytes.data() + drawn.served, n);
    OPENSSL_cleanse(drawn.bytes.data() + drawn.served, n); // served once, kept nowhere
    drawn.served += n;
    to += n;
    size -= n;
  }
}

template <class T>
T random_value() {
  T value{};
  random_bytes(&value, sizeof value);
  return value;
}

/// `size` random bytes as lowercase hex.
inline std::string random_hex(size_t size) {
  std::string bytes(size, '\0');
  random_bytes(bytes.data(), bytes.size());
  return to_hex(bytes);
}

} // namespace qf::boundary
