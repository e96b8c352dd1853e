// The one place that knows which architectures exist: one line each.
#include "model/arch.hpp"

namespace cortex {

extern const arch_def arch_llama, arch_qwen2, arch_qwen3, arch_granite, arch_smollm3, arch_phi3, arch_gemma2, arch_gemma3,
    arch_gemma4, arch_qwen3moe, arch_gpt_oss, arch_qwen35, arch_qwen35moe, arch_bert,
    arch_nomic_bert, arch_jina_bert_v2, arch_modern_bert;

namespace {
const arch_def* const registry[] = {
    &arch_llama,   &arch_qwen2,    &arch_qwen3,   &arch_granite, &arch_smollm3,   &arch_phi3,
    &arch_gemma2,  &arch_gemma3,   &arch_gemma4,  &arch_qwen3moe, &arch_gpt_oss, &arch_qwen35,
    &arch_qwen35moe, &arch_bert, &arch_nomic_bert, &arch_jina_bert_v2, &arch_modern_bert,
};
}  // namespace

const arch_def* find_arch(const std::string& name) {
  for (const arch_def* a : registry) {
    if (name == a->name) return a;
  }
  return nullptr;
}

std::string supported_archs() {
  std::string s;
  for (const arch_def* a : registry) s += (s.empty() ? "" : ", ") + std::string(a->name);
  return s;
}

}  // namespace cortex
