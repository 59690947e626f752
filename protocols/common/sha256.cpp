#include "protocols/common/sha256.hpp"

#include <openssl/sha.h>

namespace qf {

std::string sha256_hex(std::string_view bytes) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), digest);
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * sizeof(digest));
  for (auto b : digest) {
    out += hex[b >> 4];
    out += hex[b & 0xF];
  }
  return out;
}

} // namespace qf
