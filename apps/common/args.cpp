#include "apps/common/args.hpp"

#include <cerrno>
#include <cstdlib>

namespace cortex::cli {

const option_spec* args::find(const std::string& name) const {
  for (auto& s : specs_) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

bool args::parse(int argc, char** argv) {
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") { help_ = true; return true; }
    if (a.rfind("--", 0) != 0) {
      error_ = "unexpected argument '" + a + "' (options start with --; see '" + command_ + " --help')";
      return false;
    }
    std::string name = a.substr(2), value;
    bool inline_value = false;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      inline_value = true;
    }
    const option_spec* spec = find(name);
    if (!spec) {
      error_ = "unknown option '--" + name + "' for '" + command_ + "' (see --help)";
      return false;
    }
    if (spec->value.empty()) {
      values_[name] = inline_value ? value : "1";
      continue;
    }
    if (!inline_value) {
      if (i + 1 >= argc) {
        error_ = "option '--" + name + "' needs a value (" + spec->value + ")";
        return false;
      }
      value = argv[++i];
    }
    values_[name] = value;
  }
  return true;
}

std::string args::get(const std::string& name) const {
  if (auto it = values_.find(name); it != values_.end()) return it->second;
  if (auto* s = find(name)) return s->fallback;
  return {};
}

std::optional<long long> args::get_int(const std::string& name) {
  const std::string v = get(name);
  errno = 0;
  char* end = nullptr;
  long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || errno != 0 || *end != '\0') {
    error_ = "option '--" + name + "' expects an integer, got '" + v + "'";
    return std::nullopt;
  }
  return x;
}

std::optional<double> args::get_float(const std::string& name) {
  const std::string v = get(name);
  errno = 0;
  char* end = nullptr;
  double x = std::strtod(v.c_str(), &end);
  if (v.empty() || errno != 0 || *end != '\0') {
    error_ = "option '--" + name + "' expects a number, got '" + v + "'";
    return std::nullopt;
  }
  return x;
}

std::string args::usage() const {
  std::string u = "usage: " + command_ + " [options]\n\n" + summary_ + "\n\noptions:\n";
  for (auto& s : specs_) {
    std::string left = "  --" + s.name + (s.value.empty() ? "" : " " + s.value);
    if (left.size() < 28) left.resize(28, ' '); else left += "  ";
    u += left + s.help;
    if (!s.fallback.empty()) u += " (default: " + s.fallback + ")";
    u += "\n";
  }
  u += "  -h, --help                  show this help\n";
  return u;
}

}  // namespace cortex::cli
