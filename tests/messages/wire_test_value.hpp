// A msgpack value for writing test messages tersely, independent of the codec
// under test (it packs with msgpack-c directly):
//   auto m = mp::map({{"v", 1}, {"t", "submit"}, {"id", "a"}, {"prompt", "hi"}});
//   m.at("params").set("top_p", 1.5);
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include <msgpack.hpp>

#include "messages/wire/client_decode.hpp"

namespace cortex::wire::test {

struct mp {
  enum class kind { nil, boolean, uint, sint, f32, f64, str, bin, array, map, raw };
  kind k = kind::nil;
  bool b = false;
  uint64_t u = 0;
  int64_t i = 0;
  double d = 0;
  std::string s;  // str, bin, raw bytes
  std::vector<mp> items;
  std::vector<std::pair<mp, mp>> entries;

  mp() = default;
  mp(bool v) : k(kind::boolean), b(v) {}
  mp(int v) : mp(static_cast<long long>(v)) {}
  mp(long v) : mp(static_cast<long long>(v)) {}
  mp(long long v) : k(v < 0 ? kind::sint : kind::uint), u(static_cast<uint64_t>(v)), i(v) {}
  mp(unsigned v) : k(kind::uint), u(v) {}
  mp(unsigned long v) : k(kind::uint), u(v) {}
  mp(unsigned long long v) : k(kind::uint), u(v) {}
  mp(double v) : k(kind::f64), d(v) {}
  mp(const char* v) : k(kind::str), s(v) {}
  mp(std::string v) : k(kind::str), s(std::move(v)) {}

  static mp nil() { return mp(); }
  static mp f32(float v) {
    mp m;
    m.k = kind::f32, m.d = v;
    return m;
  }
  static mp bin(std::string bytes) {
    mp m;
    m.k = kind::bin, m.s = std::move(bytes);
    return m;
  }
  // Bytes spliced in verbatim as one value (hostile or hand-encoded input).
  static mp raw(std::string bytes) {
    mp m;
    m.k = kind::raw, m.s = std::move(bytes);
    return m;
  }
  static mp arr(std::vector<mp> v) {
    mp m;
    m.k = kind::array, m.items = std::move(v);
    return m;
  }
  static mp map(std::vector<std::pair<mp, mp>> v) {
    mp m;
    m.k = kind::map, m.entries = std::move(v);
    return m;
  }

  // Map access by string key: the value (added as nil, or as an empty map
  // for at(), when absent).
  mp& at(const std::string& key) {
    for (auto& [kk, vv] : entries)
      if (kk.k == kind::str && kk.s == key) return vv;
    entries.emplace_back(mp(key), map({}));
    return entries.back().second;
  }
  mp& set(const std::string& key, mp v) {
    at(key) = std::move(v);
    return *this;
  }
  mp& erase(const std::string& key) {
    for (auto it = entries.begin(); it != entries.end(); ++it)
      if (it->first.k == kind::str && it->first.s == key) {
        entries.erase(it);
        break;
      }
    return *this;
  }

  template <class Buffer>
  static void write_be(Buffer& buf, char tag, uint64_t bits, int n_bytes) {
    char b[9] = {tag};
    for (int k = 0; k < n_bytes; ++k) b[1 + k] = static_cast<char>(bits >> (8 * (n_bytes - 1 - k)));
    buf.write(b, static_cast<size_t>(1 + n_bytes));
  }

  template <class Buffer>
  void pack_into(msgpack::packer<Buffer>& pk, Buffer& buf) const {
    switch (k) {
      case kind::nil: pk.pack_nil(); break;
      case kind::boolean: b ? pk.pack_true() : pk.pack_false(); break;
      case kind::uint: pk.pack_uint64(u); break;
      case kind::sint: pk.pack_int64(i); break;
      // Written by hand: msgpack-c's pack_float/pack_double turn 2.0 into an integer.
      case kind::f32: {
        const float f = static_cast<float>(d);
        uint32_t bits;
        std::memcpy(&bits, &f, 4);
        write_be(buf, '\xca', bits, 4);
        break;
      }
      case kind::f64: {
        uint64_t bits;
        std::memcpy(&bits, &d, 8);
        write_be(buf, '\xcb', bits, 8);
        break;
      }
      case kind::str: pk.pack_str(static_cast<uint32_t>(s.size())).pack_str_body(s.data(), static_cast<uint32_t>(s.size())); break;
      case kind::bin: pk.pack_bin(static_cast<uint32_t>(s.size())).pack_bin_body(s.data(), static_cast<uint32_t>(s.size())); break;
      case kind::raw: buf.write(s.data(), s.size()); break;
      case kind::array:
        pk.pack_array(static_cast<uint32_t>(items.size()));
        for (const mp& x : items) x.pack_into(pk, buf);
        break;
      case kind::map:
        pk.pack_map(static_cast<uint32_t>(entries.size()));
        for (const auto& [kk, vv] : entries) {
          kk.pack_into(pk, buf);
          vv.pack_into(pk, buf);
        }
        break;
    }
  }

  std::vector<uint8_t> bytes() const {
    msgpack::sbuffer buf;
    msgpack::packer<msgpack::sbuffer> pk(buf);
    pack_into(pk, buf);
    return std::vector<uint8_t>(buf.data(), buf.data() + buf.size());
  }
};

// {"v": 1, "t": t} plus `fields`.
inline mp envelope(const char* t, std::vector<std::pair<mp, mp>> fields = {}) {
  mp m = mp::map({{"v", 1}, {"t", t}});
  for (auto& f : fields) m.entries.push_back(std::move(f));
  return m;
}

// Decodes `m` as a client message with limits `lim`.
inline decode_result decode(const mp& m, const decode_limits& lim = {}) {
  const std::vector<uint8_t> b = m.bytes();
  return decode_client_message(b.data(), b.size(), lim);
}

}  // namespace cortex::wire::test
