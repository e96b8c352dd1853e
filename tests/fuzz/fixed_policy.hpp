// The access policy the fuzz targets check credentials against: one key,
// "alice" (tier "free", no limits), whose secret is "cs-alice".
#pragma once

#include <memory>

#include "actors/auth/access_policy.hpp"
#include "actors/auth/secrets.hpp"

namespace cortex::fuzz {

inline const auth::access_policy& fixed_policy() {
  static const std::shared_ptr<auth::access_policy> p = [] {
    auth::keys_config c;
    c.tiers["free"] = {};
    c.keys.push_back({"alice", "free", auth::sha256_hex("cs-alice"), ""});
    return auth::access_policy::create(c);
  }();
  return *p;
}

}  // namespace cortex::fuzz
