// SHA-256 as lower-case hex (OpenSSL's libcrypto).
#pragma once

#include <string>
#include <string_view>

namespace qf {

std::string sha256_hex(std::string_view bytes);

} // namespace qf
