// Fuzz target: access control's inputs from outside (actors/auth/). Byte 0:
//   even: the rest is a keys file (parse_keys_file); a file that parses
//         becomes a policy (access_policy::create) and is asked about a
//         secret and a CURVE key;
//   odd:  the rest is an Authorization header value (bearer_token,
//         check_bearer against a fixed policy).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "actors/auth/credentials.hpp"
#include "actors/auth/keys_file.hpp"
#include "tests/fuzz/fixed_policy.hpp"
#include "tests/fuzz/fuzz_check.hpp"

using namespace cortex;

namespace {

using fuzz::fixed_policy;

void fuzz_keys_file(std::string_view text) {
  auto cfg = auth::parse_keys_file(text, "fuzz.json");
  if (!cfg) {
    FUZZ_CHECK(!cfg.error().message.empty());
    return;
  }
  // keys_file.hpp: every key names a tier of the file.
  for (const auto& k : cfg->keys) FUZZ_CHECK(cfg->tiers.count(k.tier) == 1);
  auto p = auth::access_policy::create(*cfg);
  (void)p->authenticate_secret("cs-alice");
  (void)p->authenticate_curve("rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7");
  if (!cfg->keys.empty()) (void)p->authenticate_curve(cfg->keys.front().curve_public);
}

void fuzz_authorization(std::string_view header) {
  const auto token = auth::bearer_token(header);
  if (token) FUZZ_CHECK(!token->empty() && token->size() <= header.size());
  const auto c = auth::check_bearer(fixed_policy(), header);
  if (c.ok()) {
    FUZZ_CHECK(c.key_id == "alice");
  } else {
    FUZZ_CHECK(!c.error.message.empty());
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)fixed_policy();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  if (data[0] % 2 == 0) {
    fuzz_keys_file(rest);
  } else {
    fuzz_authorization(rest);
  }
  return 0;
}
