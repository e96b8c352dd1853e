// keys new: makes an API key (auth.md): a secret of 32 random bytes from the
// OS, shown once as cs- + base64url, and its SHA-256 added to a keys file.
// The secret itself is never written anywhere.
#include <cstdio>
#include <string>

#include "actors/auth/keys_file.hpp"
#include "actors/auth/secrets.hpp"
#include "apps/cortex/commands.hpp"
#include "apps/cortex/common.hpp"

namespace cortex::cli {

int cmd_keys_new(int argc, char** argv) {
  args a("keys new",
         "Makes an API key: prints a new secret (cs- + 43 base64url characters, from 32 random bytes of the OS)\n"
         "once, and adds its SHA-256 with the key's id and tier to the keys file (created, mode 0600, if absent:\n"
         "then with the tier and no limits; edit its limits in the file). A running cortexd --auth FILE picks the\n"
         "key up on SIGHUP (kill -HUP <pid>). Keep the secret: it cannot be recovered, only replaced.",
         {{"id", "NAME", "the key's id (1 to 64 of A-Z a-z 0-9 . _ -): what logs, metrics and stats show", ""},
          {"tier", "T", "the key's tier (a name under \"tiers\" in the file)", ""},
          {"file", "F", "the keys file (JSON, docs/operations.md)", ""},
          {"curve-public", "Z85", "optional: the client's CURVE public key ('cortex keys curve' makes a pair)", ""}});
  if (int rc = parse_args(a, argc, argv); rc >= 0) return rc;
  for (const char* required : {"id", "tier", "file"}) {
    if (!a.has(required)) {
      std::fprintf(stderr, "cortex: --%s is required (cortex keys new --help)\n", required);
      return 2;
    }
  }
  auto secret = auth::new_secret();
  if (!secret) {
    std::fprintf(stderr, "cortex: %s\n", secret.error().message.c_str());
    return 1;
  }
  auth::key_entry k{a.get("id"), a.get("tier"), auth::sha256_hex(*secret), a.has("curve-public") ? a.get("curve-public") : ""};
  bool created_tier = false;
  if (status s = auth::add_key_to_file(a.get("file"), k, &created_tier); !s) {
    std::fprintf(stderr, "cortex: %s\n", s.message.c_str());
    return s.code == errc::internal ? 1 : 2;
  }
  std::printf("%s\n", secret->c_str());
  std::fprintf(stderr, "key '%s' (tier '%s') added to %s%s.\nThe secret above is shown only now: give it to the client "
               "(HTTP: 'Authorization: Bearer <secret>'; wire: the submit's auth field).\n"
               "Reload a running server with SIGHUP.\n",
               k.id.c_str(), k.tier.c_str(), a.get("file").c_str(),
               created_tier ? " (new file; the tier has no limits yet: edit it)" : "");
  return 0;
}

}  // namespace cortex::cli
