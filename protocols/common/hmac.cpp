#include "protocols/common/hmac.hpp"

#include "protocols/common/hex.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>

namespace qf {

std::string hmac_sha256_hex(std::string_view key, std::string_view data) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), mac, &size);
  return to_hex({reinterpret_cast<const char*>(mac), size});
}

} // namespace qf
