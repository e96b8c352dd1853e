// cortex keys: credentials for cortexd's access control
// (../shared/docs/auth.md). Subcommands:
//   new    an API key (cmd_keys_new.cpp)
//   curve  a CURVE key pair (NAME.key: Z85 secret, mode 0600; NAME.pub: Z85
//          public), for cortexd (--curve-secret-key) or for a client
//          (--curve-key, its public key listed in the keys file).
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "apps/cortex/commands.hpp"
#include "apps/cortex/common.hpp"

namespace cortex::cli {

namespace {

// Writes `text` to `path` with `mode`, replacing an existing file only with
// `force`. A replaced file gets `mode` too (open() applies it only when
// creating). False with `error`.
bool write_key_file(const std::string& path, const std::string& text, mode_t mode, bool force, std::string& error) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | (force ? O_TRUNC : O_EXCL), mode);
  if (fd < 0) {
    error = "cannot write '" + path + "': " + std::strerror(errno);
    return false;
  }
  bool ok = ::fchmod(fd, mode) == 0;
  ok = ok && ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ok = (::close(fd) == 0) && ok;
  if (!ok) error = "cannot write '" + path + "': " + std::strerror(errno);
  return ok;
}

int keys_curve(int argc, char** argv) {
  args a("keys curve",
         "Writes a CURVE key pair (ZeroMQ's zmq_curve_keypair): NAME.key holds the secret key and NAME.pub the\n"
         "public key, each as 40 Z85 characters and a newline; NAME.key is created with mode 0600. A pair serves\n"
         "either side: cortexd's (--curve-secret-key NAME.key; clients get NAME.pub) or a client's (its public key\n"
         "listed as curve_public in cortexd's keys file; the client uses --curve-key NAME).",
         {{"out", "NAME", "write NAME.key and NAME.pub", ""},
          {"force", "", "replace existing files", ""}});
  if (int rc = parse_args(a, argc, argv); rc >= 0) return rc;
  if (!a.has("out") || a.get("out").empty()) {
    std::fprintf(stderr, "cortex: --out NAME is required (writes NAME.key and NAME.pub)\n");
    return 2;
  }
  const std::string name = a.get("out"), key_path = name + ".key", pub_path = name + ".pub";
  const bool force = a.has("force");
  struct stat st;
  for (const std::string& p : {key_path, pub_path}) {
    if (!force && ::stat(p.c_str(), &st) == 0) {
      std::fprintf(stderr, "cortex: '%s' exists; not replacing a key (--force replaces it)\n", p.c_str());
      return 1;
    }
  }
  char pub[41] = {}, secret[41] = {};
  if (zmq_curve_keypair(pub, secret) != 0) {
    std::fprintf(stderr, "cortex: cannot make a CURVE key pair: %s\n", zmq_strerror(zmq_errno()));
    return 1;
  }
  std::string error;
  if (!write_key_file(key_path, std::string(secret) + "\n", 0600, force, error) ||
      !write_key_file(pub_path, std::string(pub) + "\n", 0644, force, error)) {
    std::fprintf(stderr, "cortex: %s\n", error.c_str());
    return 1;
  }
  std::printf(
      "wrote %s (secret key, mode 0600) and %s (public key)\n\n"
      "As a client key: list it in cortexd's keys file (--auth FILE), in the key's entry:\n"
      "  \"curve_public\": \"%s\"\n"
      "and connect with: cortex submit --curve-key %s --curve-server-key SERVER.pub ...\n\n"
      "As the server key: cortexd --auth FILE --curve-secret-key %s\n"
      "and give clients %s (--curve-server-key).\n",
      key_path.c_str(), pub_path.c_str(), pub, name.c_str(), key_path.c_str(), pub_path.c_str());
  return 0;
}

struct subcommand {
  const char* name;
  int (*run)(int, char**);
  const char* help;
};

// One row per subcommand (each a function above taking the arguments after
// its name).
const subcommand k_subcommands[] = {
    {"new", cmd_keys_new, "make an API key: a secret shown once, its SHA-256 added to a keys file"},
    {"curve", keys_curve, "write a CURVE key pair (NAME.key, NAME.pub) for cortexd or a ZeroMQ client"},
};

void print_usage(FILE* out) {
  std::fprintf(out, "usage: cortex keys <subcommand> [options]\n\nCredentials for cortexd's access control "
                    "(--auth). 'cortex keys <subcommand> --help' describes each.\n\nsubcommands:\n");
  for (auto& c : k_subcommands) std::fprintf(out, "  %-8s %s\n", c.name, c.help);
}

}  // namespace

int cmd_keys(int argc, char** argv) {
  if (argc < 1 || !std::strcmp(argv[0], "-h") || !std::strcmp(argv[0], "--help")) {
    print_usage(argc < 1 ? stderr : stdout);
    return argc < 1 ? 2 : 0;
  }
  for (auto& c : k_subcommands) {
    if (std::strcmp(argv[0], c.name) == 0) return c.run(argc - 1, argv + 1);
  }
  std::fprintf(stderr, "cortex: unknown subcommand 'keys %s'\n\n", argv[0]);
  print_usage(stderr);
  return 2;
}

}  // namespace cortex::cli
