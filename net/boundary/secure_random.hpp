// Secrets strangers must not guess (cancel keys, login scrambles, nextUri
// slugs): OpenSSL's DRBG, seeded by the OS. Not std::random_device, which
// here is RDRAND or the like: on this VM about 20 us a call, and a MySQL
// scramble took twenty of them, which made connecting through the MySQL
// frontend cost 0.5 ms of CPU.
#pragma once

#include "protocols/common/hex.hpp"

#include <openssl/rand.h>

#include <stdexcept>
#include <string>

namespace qf::boundary {

inline void random_bytes(void* out, size_t size) {
  if (RAND_bytes(static_cast<unsigned char*>(out), static_cast<int>(size)) != 1)
    throw std::runtime_error("the random number generator failed");
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
