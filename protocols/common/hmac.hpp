// HMAC-SHA256 (OpenSSL's libcrypto), for values a node signs and later
// checks without keeping them: Studio's session cookies.
#pragma once

#include <string>
#include <string_view>

namespace qf {

/// The 32-byte MAC of `data` under `key`, as lowercase hex.
std::string hmac_sha256_hex(std::string_view key, std::string_view data);

} // namespace qf
