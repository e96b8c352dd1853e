// Writing msgpack for the wire: a byte sink for msgpack-c's packer and float
// writers that keep floats floats.
//
// Why: msgpack-c 4.x's pack_float/pack_double write an integral value (1.0)
// as an integer, so a field protocol.md types as float would change type
// with its value, and an echoed nonce 3.0 would come back as 3. Floats are
// written here as float32 (0xca) / float64 (0xcb) always.
#pragma once

#include <cstdint>
#include <vector>

#include <msgpack.hpp>

namespace cortex::wire {

// msgpack-c's packer writes into anything with write(const char*, size_t);
// it does not buffer, so raw writes to the same vector interleave correctly.
struct byte_sink {
  std::vector<uint8_t>& out;
  void write(const char* p, size_t n) { out.insert(out.end(), p, p + n); }
};

void write_f32(std::vector<uint8_t>& out, float v);
void write_f64(std::vector<uint8_t>& out, double v);

// Re-encodes `o` keeping every type as msgpack-c parsed it (float32 stays
// float32, float64 stays float64, ext stays ext). Recursive: REQUIRES `o`'s
// depth to be bounded (unpack_bounded's max_depth).
void write_object(std::vector<uint8_t>& out, const msgpack::object& o);

}  // namespace cortex::wire
