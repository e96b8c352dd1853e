// API-key secrets (auth.md): generated from the OS's random source, stored
// only as SHA-256, compared in constant time. CAF-free (OpenSSL's libcrypto).
#pragma once

#include <string>
#include <string_view>

#include "base/expected.hpp"

namespace cortex::auth {

// "cs-" + base64url (no padding) of 32 random bytes from getrandom(2):
// 46 characters. Fails only if the OS has no randomness to give.
expected<std::string> new_secret();

// SHA-256 of `data` as 64 lowercase hex digits.
std::string sha256_hex(std::string_view data);

// Base64url without padding (RFC 4648 section 5).
std::string base64url(std::string_view bytes);

// Equality of two equally long strings in time independent of their
// contents (lengths are not secret: both are SHA-256 hex).
bool equal_constant_time(std::string_view a, std::string_view b);

// Whether `s` is a 40-character Z85 string (a CURVE key).
bool is_z85_key(std::string_view s);

}  // namespace cortex::auth
