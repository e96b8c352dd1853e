#include "actors/auth/keys_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "actors/auth/secrets.hpp"

namespace cortex::auth {

namespace {

using json = nlohmann::ordered_json;
constexpr size_t max_file_bytes = 16u << 20;

status bad(const std::string& origin, const std::string& what) { return fail(errc::invalid_param, origin + ": " + what); }

bool valid_id(const std::string& id) {
  if (id.empty() || id.size() > 64) return false;
  for (char c : id) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) return false;
  }
  return true;
}

bool valid_sha256(const std::string& h) {
  if (h.size() != 64) return false;
  for (char c : h) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// A per-minute rate: a positive finite number.
status read_rate(const json& v, const std::string& where, std::optional<double>& out) {
  if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(v.get<double>()))
    return fail(errc::invalid_param, where + " must be a number > 0 (omit it for no limit), got " + v.dump());
  out = v.get<double>();
  return {};
}

status read_count(const json& v, const std::string& where, std::optional<uint32_t>& out) {
  if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > UINT32_MAX)
    return fail(errc::invalid_param, where + " must be an integer >= 1 (omit it for no limit), got " + v.dump());
  out = static_cast<uint32_t>(v.get<int64_t>());
  return {};
}

status read_tier(const std::string& name, const json& t, tier_limits& out) {
  const std::string where = "tiers." + name;
  if (!t.is_object()) return fail(errc::invalid_param, where + " must be an object of limits");
  for (const auto& [k, v] : t.items()) {
    const std::string field = where + "." + k;
    status s;
    if (k == "requests_per_minute") {
      s = read_rate(v, field, out.requests_per_minute);
    } else if (k == "tokens_per_minute") {
      s = read_rate(v, field, out.tokens_per_minute);
    } else if (k == "max_concurrent") {
      s = read_count(v, field, out.max_concurrent);
    } else if (k == "max_tokens") {
      s = read_count(v, field, out.max_tokens);
    } else if (k == "max_priority") {
      if (!v.is_number_integer() || v.get<int64_t>() < INT32_MIN || v.get<int64_t>() > INT32_MAX)
        return fail(errc::invalid_param, field + " must be an integer, got " + v.dump());
      out.max_priority = static_cast<int32_t>(v.get<int64_t>());
    } else {
      return fail(errc::invalid_param, "unknown field " + field +
                                           " (known: requests_per_minute, tokens_per_minute, max_concurrent, max_tokens, "
                                           "max_priority)");
    }
    if (!s) return s;
  }
  return {};
}

status read_string(const json& key, const char* name, const std::string& where, std::string& out, bool required) {
  auto it = key.find(name);
  if (it == key.end()) return required ? fail(errc::invalid_param, where + " lacks \"" + name + "\"") : status{};
  if (!it->is_string()) return fail(errc::invalid_param, where + "." + name + " must be a string");
  out = it->get<std::string>();
  return {};
}

status read_key(const json& k, const std::string& where, key_entry& out) {
  if (!k.is_object()) return fail(errc::invalid_param, where + " must be an object {id, tier, sha256, curve_public?}");
  for (const auto& [name, v] : k.items()) {
    (void)v;
    if (name != "id" && name != "tier" && name != "sha256" && name != "curve_public")
      return fail(errc::invalid_param, "unknown field " + where + "." + name + " (known: id, tier, sha256, curve_public)");
  }
  for (auto [name, dst, required] : {std::tuple{"id", &out.id, true}, std::tuple{"tier", &out.tier, true},
                                     std::tuple{"sha256", &out.sha256, true}, std::tuple{"curve_public", &out.curve_public, false}}) {
    if (status s = read_string(k, name, where, *dst, required); !s) return s;
  }
  if (!valid_id(out.id))
    return fail(errc::invalid_param, where + ".id \"" + out.id + "\" must be 1 to 64 of A-Z a-z 0-9 . _ -");
  if (!valid_sha256(out.sha256))
    return fail(errc::invalid_param, "key \"" + out.id +
                                         "\": sha256 must be the 64 hex digits of the secret's SHA-256 (never the secret itself; "
                                         "`cortex keys new` writes it)");
  out.sha256 = lower(out.sha256);
  if (!out.curve_public.empty() && !is_z85_key(out.curve_public))
    return fail(errc::invalid_param, "key \"" + out.id + "\": curve_public must be a 40-character Z85 CURVE public key "
                                                          "(`cortex keys curve` writes one)");
  return {};
}

status check_unique(const keys_config& c) {
  std::set<std::string> ids, hashes, curves;
  for (const auto& k : c.keys) {
    if (!ids.insert(k.id).second) return fail(errc::invalid_param, "duplicate key id \"" + k.id + "\"");
    if (!hashes.insert(k.sha256).second)
      return fail(errc::invalid_param, "key \"" + k.id + "\" has the same sha256 as an earlier key; each key needs its own secret");
    if (!k.curve_public.empty() && !curves.insert(k.curve_public).second)
      return fail(errc::invalid_param, "key \"" + k.id + "\" has the same curve_public as an earlier key");
    if (!c.tiers.count(k.tier)) {
      std::string known;
      for (const auto& [name, t] : c.tiers) known += (known.empty() ? "" : ", ") + name;
      return fail(errc::invalid_param, "key \"" + k.id + "\" names unknown tier \"" + k.tier + "\" (tiers: " +
                                           (known.empty() ? "none" : known) + ")");
    }
  }
  return {};
}

expected<json> parse_json(std::string_view text, const std::string& origin) {
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    return bad(origin, std::string("not valid JSON: ") + e.what());
  }
}

expected<keys_config> from_json(const json& doc, const std::string& origin) {
  if (!doc.is_object()) return bad(origin, "must be a JSON object {\"tiers\": {...}, \"keys\": [...]}");
  keys_config c;
  for (const auto& [name, v] : doc.items()) {
    (void)v;
    if (name != "tiers" && name != "keys") return bad(origin, "unknown top-level field \"" + name + "\" (known: tiers, keys)");
  }
  auto tiers = doc.find("tiers");
  if (tiers == doc.end() || !tiers->is_object()) return bad(origin, "\"tiers\" must be an object of named tiers");
  for (const auto& [name, t] : tiers->items()) {
    if (!valid_id(name)) return bad(origin, "tier name \"" + name + "\" must be 1 to 64 of A-Z a-z 0-9 . _ -");
    if (status s = read_tier(name, t, c.tiers[name]); !s) return bad(origin, s.message);
  }
  auto keys = doc.find("keys");
  if (keys == doc.end() || !keys->is_array()) return bad(origin, "\"keys\" must be an array of keys");
  for (size_t i = 0; i < keys->size(); ++i) {
    key_entry k;
    if (status s = read_key((*keys)[i], "keys[" + std::to_string(i) + "]", k); !s) return bad(origin, s.message);
    c.keys.push_back(std::move(k));
  }
  if (status s = check_unique(c); !s) return bad(origin, s.message);
  return c;
}

expected<std::string> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return fail(errc::invalid_param, "cannot open keys file " + path + ": " + std::strerror(errno));
  std::string text;
  char buf[65536];
  while (f.read(buf, sizeof buf) || f.gcount() > 0) {
    text.append(buf, static_cast<size_t>(f.gcount()));
    if (text.size() > max_file_bytes) return fail(errc::invalid_param, "keys file " + path + " is larger than 16 MiB");
  }
  return text;
}

}  // namespace

expected<keys_config> parse_keys_file(std::string_view text, const std::string& origin) {
  auto doc = parse_json(text, origin);
  if (!doc) return doc.error();
  return from_json(*doc, origin);
}

expected<keys_config> load_keys_file(const std::string& path) {
  auto text = read_file(path);
  if (!text) return text.error();
  return parse_keys_file(*text, path);
}

status add_key_to_file(const std::string& path, const key_entry& key, bool* created_tier) {
  json doc;
  struct stat st {};
  const bool exists = ::stat(path.c_str(), &st) == 0;
  if (exists) {
    auto text = read_file(path);
    if (!text) return text.error();
    auto parsed = parse_json(*text, path);
    if (!parsed) return parsed.error();
    if (auto c = from_json(*parsed, path); !c) return c.error();
    doc = std::move(*parsed);
  } else {
    doc = json{{"tiers", json::object()}, {"keys", json::array()}};
  }
  if (created_tier) *created_tier = false;
  if (!doc["tiers"].contains(key.tier)) {
    if (exists) {
      std::string known;
      for (const auto& [name, t] : doc["tiers"].items()) known += (known.empty() ? "" : ", ") + name;
      return fail(errc::invalid_param, path + " has no tier \"" + key.tier + "\" (tiers: " + (known.empty() ? "none" : known) +
                                           "); add it to the file first");
    }
    doc["tiers"][key.tier] = json::object();
    if (created_tier) *created_tier = true;
  }
  json k{{"id", key.id}, {"tier", key.tier}, {"sha256", key.sha256}};
  if (!key.curve_public.empty()) k["curve_public"] = key.curve_public;
  doc["keys"].push_back(std::move(k));
  if (auto c = from_json(doc, path); !c) return c.error();  // duplicate id or hash, bad id

  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, exists ? (st.st_mode & 0777) : 0600);
  if (fd < 0) return fail(errc::invalid_param, "cannot write " + tmp + ": " + std::strerror(errno));
  const std::string text = doc.dump(2) + "\n";
  size_t off = 0;
  while (off < text.size()) {
    const ssize_t n = ::write(fd, text.data() + off, text.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      return fail(errc::invalid_param, "cannot write " + tmp + ": " + why);
    }
    off += static_cast<size_t>(n);
  }
  const bool synced = ::fsync(fd) == 0;
  const bool closed = ::close(fd) == 0;
  if (!synced || !closed || ::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    return fail(errc::invalid_param, "cannot replace " + path + ": " + why);
  }
  return {};
}

}  // namespace cortex::auth
