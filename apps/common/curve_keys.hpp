// CURVE keys on the client side of ZeroMQ (../shared/docs/auth.md): key
// files as `cortex keys curve --out NAME` writes them (NAME.key: the Z85
// secret, NAME.pub: the Z85 public key, each 40 characters and a newline),
// the --curve-server-key / --curve-key options of the wire-speaking programs,
// and turning a DEALER socket into a CURVE client.
#pragma once

#include <string>
#include <vector>

#include "apps/common/args.hpp"

namespace cortex::cli {

// Reads one key file: 40 Z85 characters, a trailing newline (LF or CRLF)
// allowed, nothing else. False with `error` naming the file and what is
// wrong (missing, unreadable, not a key).
bool read_curve_key_file(const std::string& path, std::string& key, std::string& error);

// What a CURVE client needs, all Z85. All empty: plaintext.
struct curve_client_keys {
  std::string server_public;  // the server's public key (--curve-server-key FILE)
  std::string public_key;     // this client's key pair (--curve-key NAME: NAME.pub, NAME.key)
  std::string secret_key;
  bool enabled() const { return !server_public.empty(); }
};

// --curve-server-key FILE and --curve-key NAME, for a program's option table.
std::vector<option_spec> curve_client_specs();

// The keys those options name: both options or neither (plaintext). Checks
// that NAME.pub is the public half of NAME.key. False with `error` saying
// what to fix.
bool curve_client_keys_from_args(const args& a, curve_client_keys& out, std::string& error);

// Makes a ZeroMQ socket a CURVE client of `keys`. REQUIRES: keys.enabled(),
// called before the socket connects. False with `error` on refusal.
bool apply_curve_client(void* zmq_socket, const curve_client_keys& keys, std::string& error);

}  // namespace cortex::cli
