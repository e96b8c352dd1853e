#include "messages/wire/msgpack_write.hpp"

#include <cstring>

namespace cortex::wire {
namespace {

void write_be(std::vector<uint8_t>& out, uint8_t tag, uint64_t bits, int n_bytes) {
  out.push_back(tag);
  for (int i = n_bytes - 1; i >= 0; --i) out.push_back(static_cast<uint8_t>(bits >> (8 * i)));
}

}  // namespace

void write_f32(std::vector<uint8_t>& out, float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  write_be(out, 0xca, bits, 4);
}

void write_f64(std::vector<uint8_t>& out, double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  write_be(out, 0xcb, bits, 8);
}

void write_object(std::vector<uint8_t>& out, const msgpack::object& o) {
  byte_sink sink{out};
  msgpack::packer<byte_sink> pk(sink);
  switch (o.type) {
    case msgpack::type::FLOAT32: write_f32(out, static_cast<float>(o.via.f64)); return;
    case msgpack::type::FLOAT64: write_f64(out, o.via.f64); return;
    case msgpack::type::ARRAY:
      pk.pack_array(o.via.array.size);
      for (uint32_t i = 0; i < o.via.array.size; ++i) write_object(out, o.via.array.ptr[i]);
      return;
    case msgpack::type::MAP:
      pk.pack_map(o.via.map.size);
      for (uint32_t i = 0; i < o.via.map.size; ++i) {
        write_object(out, o.via.map.ptr[i].key);
        write_object(out, o.via.map.ptr[i].val);
      }
      return;
    default: pk.pack(o); return;  // nil, bool, integers, str, bin, ext: msgpack-c keeps their type
  }
}

}  // namespace cortex::wire
