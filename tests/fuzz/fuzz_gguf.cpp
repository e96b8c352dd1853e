// Fuzz target: a GGUF file from outside (gguf/gguf.hpp parse on a memory
// buffer: header, metadata, tensor table), every typed metadata look-up,
// then the tokenizer a model load builds from that metadata
// (vocab::from_gguf, tokenizer::from_gguf) with a short encode / decode.
#include <cstddef>
#include <cstdint>
#include <string>

#include "gguf/gguf.hpp"
#include "text/tokenizer.hpp"
#include "tests/fuzz/fuzz_check.hpp"

using namespace cortex;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto opened = gguf::file::parse(data, size, "fuzz.gguf");
  if (!opened) {
    FUZZ_CHECK(!opened.error().message.empty());
    return 0;
  }
  const gguf::file& f = **opened;
  for (const auto& [key, v] : f.metadata()) {
    FUZZ_CHECK(f.find(key) != nullptr);
    (void)f.get_uint(key);
    (void)f.get_int(key);
    (void)f.get_float(key);
    (void)f.get_bool(key);
    (void)f.get_string(key);
    (void)f.get_f32_array(key);
    (void)f.get_i32_array(key);
    (void)f.get_string_array(key);
    (void)gguf::value_type_name(v.type);
  }
  // gguf.hpp: every tensor of an opened file lies inside the buffer.
  for (const auto& t : f.tensors()) {
    FUZZ_CHECK(f.find_tensor(t.name) != nullptr);
    FUZZ_CHECK(t.data >= data && t.n_bytes <= size && t.data - data <= static_cast<ptrdiff_t>(size - t.n_bytes));
    if (t.n_bytes > 0) {
      volatile uint8_t first = t.data[0], last = t.data[t.n_bytes - 1];
      (void)first;
      (void)last;
    }
  }
  auto tok = tokenizer::from_gguf(f);
  if (!tok) return 0;
  const auto ids = (*tok)->encode("Hello world! <s> 123 \xe2\x96\x81\xff", true, true);
  for (int32_t id : ids) FUZZ_CHECK(id >= 0 && id < (*tok)->n_vocab());
  (void)(*tok)->decode(ids);
  (void)(*tok)->decode({-1, 0, 1, (*tok)->n_vocab(), 2147483647});
  return 0;
}
