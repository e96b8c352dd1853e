#include "apps/common/curve_keys.hpp"

#include <zmq.h>

#include <fstream>
#include <sstream>

#include "actors/auth/secrets.hpp"

namespace cortex::cli {

bool read_curve_key_file(const std::string& path, std::string& key, std::string& error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot read the CURVE key file '" + path + "'";
    return false;
  }
  std::ostringstream text;
  text << in.rdbuf();
  key = text.str();
  if (!key.empty() && key.back() == '\n') key.pop_back();
  if (!key.empty() && key.back() == '\r') key.pop_back();
  if (!auth::is_z85_key(key)) {
    key.clear();  // never echo what may be a secret
    error = "'" + path + "' does not hold a CURVE key (40 Z85 characters and a newline, as 'cortex keys curve' writes)";
    return false;
  }
  return true;
}

std::vector<option_spec> curve_client_specs() {
  return {{"curve-server-key", "FILE", "CURVE: the server's public key file (cortexd runs with --curve-secret-key)", ""},
          {"curve-key", "NAME", "CURVE: this client's key pair, NAME.key and NAME.pub ('cortex keys curve --out NAME')", ""}};
}

bool curve_client_keys_from_args(const args& a, curve_client_keys& out, std::string& error) {
  out = {};
  const bool server = a.has("curve-server-key"), client = a.has("curve-key");
  if (!server && !client) return true;
  if (server != client) {
    error = "CURVE needs both --curve-server-key FILE (the server's public key) and --curve-key NAME (this client's pair)";
    return false;
  }
  const std::string name = a.get("curve-key");
  curve_client_keys k;
  if (!read_curve_key_file(a.get("curve-server-key"), k.server_public, error) ||
      !read_curve_key_file(name + ".pub", k.public_key, error) ||
      !read_curve_key_file(name + ".key", k.secret_key, error)) {
    return false;
  }
  char derived[41] = {};
  if (zmq_curve_public(derived, k.secret_key.c_str()) != 0 || k.public_key != derived) {
    error = "'" + name + ".pub' is not the public key of '" + name + ".key' (write a new pair with 'cortex keys curve')";
    return false;
  }
  out = std::move(k);
  return true;
}

bool apply_curve_client(void* zmq_socket, const curve_client_keys& keys, std::string& error) {
  if (zmq_setsockopt(zmq_socket, ZMQ_CURVE_SERVERKEY, keys.server_public.c_str(), 40) != 0 ||
      zmq_setsockopt(zmq_socket, ZMQ_CURVE_PUBLICKEY, keys.public_key.c_str(), 40) != 0 ||
      zmq_setsockopt(zmq_socket, ZMQ_CURVE_SECRETKEY, keys.secret_key.c_str(), 40) != 0) {
    error = std::string("cannot make the socket a CURVE client: ") + zmq_strerror(zmq_errno()) +
            (zmq_has("curve") ? "" : " (this libzmq has no CURVE support)");
    return false;
  }
  return true;
}

}  // namespace cortex::cli
