// The access-control keys file (../shared/docs/auth.md, "Keys file"): tiers
// and keys, parsed strictly. CAF-free; nothing throws.
//
//   {"tiers": {"free": {"requests_per_minute": 20, "tokens_per_minute": 20000,
//                       "max_concurrent": 2, "max_tokens": 512, "max_priority": 0}},
//    "keys": [{"id": "alice", "tier": "free", "sha256": "<64 hex>",
//              "curve_public": "<40 Z85, optional>"}]}
//
// A tier field that is absent means no limit. Unknown fields, a key naming an
// unknown tier, duplicate ids, hashes or CURVE keys are errors whose message
// names the offending place.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/expected.hpp"

namespace cortex::auth {

struct tier_limits {
  std::optional<double> requests_per_minute;  // > 0
  std::optional<double> tokens_per_minute;    // > 0; prompt + completion tokens
  std::optional<uint32_t> max_concurrent;     // >= 1
  std::optional<uint32_t> max_tokens;         // >= 1; a request asking for more is 403
  std::optional<int32_t> max_priority;        // a request asking for more is 403
};

struct key_entry {
  std::string id;            // 1..64 of [A-Za-z0-9._-]
  std::string tier;          // names a tier of the file
  std::string sha256;        // SHA-256 of the secret, 64 lowercase hex
  std::string curve_public;  // Z85 CURVE public key (40 chars), or empty
};

struct keys_config {
  std::map<std::string, tier_limits> tiers;
  std::vector<key_entry> keys;
};

// Parses a keys file's text. `origin` names it in messages (a path).
expected<keys_config> parse_keys_file(std::string_view json, const std::string& origin = "keys file");

// Reads and parses the file at `path` (at most 16 MiB).
expected<keys_config> load_keys_file(const std::string& path);

// Adds a key to the file at `path` (created, mode 0600, when absent: then
// `tier` is created without limits; otherwise `tier` must exist), keeping
// the rest of the file as it was; written to a temporary file and renamed,
// so a reader never sees half a file. Fails on a duplicate id or hash.
// `created_tier` is set when the tier had to be created.
status add_key_to_file(const std::string& path, const key_entry& key, bool* created_tier = nullptr);

}  // namespace cortex::auth
