// Fuzzes Studio's session cookie reader: any bytes are refused or read,
// never a crash, and a token read back is one the key signed.
#include "protocols/studio/session_token.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto text = std::string_view{reinterpret_cast<const char*>(data), size};
  const qf::studio::signing_key key{"fuzz", qf::studio::fingerprint_of("admin", "admin")};
  if (auto claims = qf::studio::verify(text, key, 0)) {
    if (qf::studio::issue(*claims, key) != text)
      std::abort();
  }
  // Whatever the bytes, a token the node issues for them reads back.
  qf::studio::session_claims mine{std::string{text.substr(0, 128)},
                                  "00112233445566778899aabbccddeeff", 10};
  auto back = qf::studio::verify(qf::studio::issue(mine, key), key, 0);
  if (!back || back->user != mine.user)
    std::abort();
  return 0;
}
