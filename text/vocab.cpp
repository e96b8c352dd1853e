#include "text/vocab.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "text/unicode.hpp"

namespace cortex {
namespace {

constexpr std::string_view k_model = "tokenizer.ggml.model";
constexpr std::string_view k_pre = "tokenizer.ggml.pre";
constexpr std::string_view k_tokens = "tokenizer.ggml.tokens";
constexpr std::string_view k_scores = "tokenizer.ggml.scores";
constexpr std::string_view k_types = "tokenizer.ggml.token_type";
constexpr std::string_view k_merges = "tokenizer.ggml.merges";

uint32_t attr_of_type(int32_t type) {
  switch (type) {
    case 1: return attr_normal;
    case 2: return attr_unknown;
    case 3: return attr_control;
    case 4: return attr_user_defined;
    case 5: return attr_unused;
    case 6: return attr_byte;
    default: return attr_undefined;
  }
}

// Texts that mark end-of-generation tokens when the file does not say so
// (llama.cpp's list at the golden data's commit).
bool is_eog_text(std::string_view t) {
  return t == "<|eot_id|>" || t == "<|im_end|>" || t == "<|end|>" || t == "<end_of_turn>" ||
         t == "<|endoftext|>" || t == "<|eom_id|>" || t == "<EOT>" || t == "_<EOT>";
}
bool is_eot_text(std::string_view t) {
  return t == "<|eot_id|>" || t == "<|im_end|>" || t == "<|end|>" || t == "<end_of_turn>" ||
         t == "<|endoftext|>" || t == "<EOT>" || t == "_<EOT>" ||
         t == "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>";
}

// Reads an optional special-token id. A default outside the vocabulary
// becomes -1; a stored id outside it (files use 0xFFFFFFFF for "none") is
// ignored and the default kept, as the reference does. A present key of a
// non-integer type is an error.
status read_special_id(const gguf::file& f, std::string_view key, int32_t n_tokens, int32_t& id) {
  if (id >= n_tokens) id = -1;
  if (!f.find(key)) return status::ok();
  const auto v = f.get_uint(key);
  if (!v) {
    if (f.get_int(key)) return status::ok();  // negative: "none"
    return fail(errc::malformed, std::string(key) + " is not an integer");
  }
  if (*v < static_cast<uint64_t>(n_tokens)) id = static_cast<int32_t>(*v);
  return status::ok();
}

status read_flag(const gguf::file& f, std::string_view key, bool& flag) {
  if (!f.find(key)) return status::ok();
  const auto v = f.get_bool(key);
  if (!v) return fail(errc::malformed, std::string(key) + " is not a bool");
  flag = *v;
  return status::ok();
}

}  // namespace

int32_t vocab::find(std::string_view text) const {
  auto it = token_to_id_.find(std::string(text));
  return it == token_to_id_.end() ? -1 : it->second;
}

int32_t vocab::merge_rank(std::string_view left, std::string_view right) const {
  std::string key;
  key.reserve(left.size() + right.size() + 1);
  key.append(left).append(1, ' ').append(right);
  auto it = merge_ranks_.find(key);
  return it == merge_ranks_.end() ? -1 : it->second;
}

expected<vocab> vocab::from_gguf(const gguf::file& f) {
  vocab v;
  const auto model = f.get_string(k_model);
  if (!model) return fail(errc::malformed, std::string(k_model) + " is missing (no tokenizer in this file)");
  v.model_name = std::string(*model);
  if (v.model_name == "llama") {
    v.kind = vocab_kind::spm;
  } else if (v.model_name == "gpt2") {
    v.kind = vocab_kind::bpe;
  } else {
    return fail(errc::unsupported, std::string(k_model) + " = '" + v.model_name +
                                           "' is not supported (supported: llama, gpt2)");
  }
  if (auto pre = f.get_string(k_pre)) v.pre_name = std::string(*pre);

  const auto* tokens = f.get_string_array(k_tokens);
  if (!tokens) return fail(errc::malformed, std::string(k_tokens) + " is missing or not a string array");
  if (tokens->empty()) return fail(errc::malformed, std::string(k_tokens) + " is empty");
  if (tokens->size() > static_cast<size_t>(INT32_MAX)) return fail(errc::malformed, "too many tokens");
  const auto n = static_cast<int32_t>(tokens->size());

  v.scores.assign(static_cast<size_t>(n), 0.0f);
  if (f.find(k_scores)) {
    auto scores = f.get_f32_array(k_scores);
    if (!scores) return fail(errc::malformed, std::string(k_scores) + " is not a numeric array");
    if (scores->size() < tokens->size()) {
      return fail(errc::malformed, std::string(k_scores) + " has " + std::to_string(scores->size()) +
                        " entries for " + std::to_string(n) + " tokens");
    }
    std::copy(scores->begin(), scores->begin() + n, v.scores.begin());
  }
  v.attrs.assign(static_cast<size_t>(n), attr_normal);
  if (f.find(k_types)) {
    auto types = f.get_i32_array(k_types);
    if (!types) return fail(errc::malformed, std::string(k_types) + " is not an integer array");
    if (types->size() < tokens->size()) {
      return fail(errc::malformed, std::string(k_types) + " has " + std::to_string(types->size()) +
                        " entries for " + std::to_string(n) + " tokens");
    }
    for (int32_t i = 0; i < n; ++i) v.attrs[static_cast<size_t>(i)] = attr_of_type((*types)[static_cast<size_t>(i)]);
  }

  v.texts.reserve(static_cast<size_t>(n));
  v.token_to_id_.reserve(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) {
    std::string text((*tokens)[static_cast<size_t>(i)]);
    if (text.empty()) text = "[EMPTY_" + std::to_string(i) + "]";  // as the reference does
    if (!v.token_to_id_.emplace(text, i).second) {
      return fail(errc::malformed, std::string(k_tokens) + ": duplicate token '" + text + "' at ids " +
                        std::to_string(v.token_to_id_[text]) + " and " + std::to_string(i));
    }
    v.texts.push_back(std::move(text));
  }

  // Defaults per tokenizer family, then what the file says.
  if (v.kind == vocab_kind::spm) {
    v.bos_id = 1; v.eos_id = 2; v.unk_id = 0;
    v.add_bos = true;  // SentencePiece files without add_bos_token add BOS
    v.add_space_prefix = true;
    v.clean_spaces = false;
  } else {
    const auto* merges = f.get_string_array(k_merges);
    if (!merges) return fail(errc::malformed, std::string(k_merges) + " is missing or not a string array (needed by gpt2 tokenizers)");
    v.merge_ranks_.reserve(merges->size());
    for (size_t r = 0; r < merges->size(); ++r) {
      const std::string_view m = (*merges)[r];
      if (m.size() < 3 || m.find(' ', 1) == std::string_view::npos) {
        return fail(errc::malformed, std::string(k_merges) + "[" + std::to_string(r) + "] = '" + std::string(m) +
                          "' is not 'left right'");
      }
      v.merge_ranks_.emplace(std::string(m), static_cast<int32_t>(r));
    }
    const std::string pre_name = v.pre_name.empty() ? "default" : v.pre_name;
    const auto pre = pre_tokenizer_from_name(pre_name);
    if (!pre) return fail(errc::unsupported, std::string(k_pre) + " = '" + pre_name + "' is not a supported pre-tokenizer");
    v.pre = *pre;
    v.bos_id = 11; v.eos_id = 11;
    v.add_bos = pre->add_bos;
    v.clean_spaces = pre->clean_spaces;
  }

  const std::pair<std::string_view, int32_t*> ids[] = {
      {"tokenizer.ggml.bos_token_id", &v.bos_id},     {"tokenizer.ggml.eos_token_id", &v.eos_id},
      {"tokenizer.ggml.eot_token_id", &v.eot_id},     {"tokenizer.ggml.eom_token_id", &v.eom_id},
      {"tokenizer.ggml.unknown_token_id", &v.unk_id}, {"tokenizer.ggml.padding_token_id", &v.pad_id},
  };
  for (const auto& [key, id] : ids) {
    if (status s = read_special_id(f, key, n, *id); !s) return s;
  }
  for (const auto& [key, flag] : {std::pair<std::string_view, bool*>{"tokenizer.ggml.add_bos_token", &v.add_bos},
                                  {"tokenizer.ggml.add_eos_token", &v.add_eos},
                                  {"tokenizer.ggml.add_space_prefix", &v.add_space_prefix}}) {
    if (status s = read_flag(f, key, *flag); !s) return s;
  }
  if (v.add_bos && v.bos_id < 0) return fail(errc::malformed, "tokenizer.ggml.add_bos_token is true but there is no BOS token");
  if (v.add_eos && v.eos_id < 0) return fail(errc::malformed, "tokenizer.ggml.add_eos_token is true but there is no EOS token");

  // End-of-generation tokens: eos/eot/eom plus well-known texts; a token
  // recognised by text is treated as a control token.
  for (int32_t i = 0; i < n; ++i) {
    const std::string& t = v.texts[static_cast<size_t>(i)];
    if (v.eot_id < 0 && is_eot_text(t)) {
      v.eot_id = i;
      v.attrs[static_cast<size_t>(i)] |= attr_control;
    }
    if (v.eom_id < 0 && t == "<|eom_id|>") {
      v.eom_id = i;
      v.attrs[static_cast<size_t>(i)] |= attr_control;
    }
    if (is_eog_text(t)) {
      v.eog_ids.push_back(i);
      v.attrs[static_cast<size_t>(i)] |= attr_control;
    }
  }
  for (int32_t id : {v.eos_id, v.eot_id, v.eom_id}) {
    if (id >= 0) v.eog_ids.push_back(id);
  }
  std::sort(v.eog_ids.begin(), v.eog_ids.end());
  v.eog_ids.erase(std::unique(v.eog_ids.begin(), v.eog_ids.end()), v.eog_ids.end());

  for (int32_t i = 0; i < n; ++i) {
    if (v.has_attr(i, attr_control | attr_user_defined | attr_unknown)) v.special_ids.push_back(i);
  }
  std::stable_sort(v.special_ids.begin(), v.special_ids.end(), [&](int32_t a, int32_t b) {
    return v.texts[static_cast<size_t>(a)].size() > v.texts[static_cast<size_t>(b)].size();
  });

  // Phi-3 files: special tokens swallow the white space after them, except
  // <unk>, <s> and <|endoftext|> (llama.cpp applies this by general.name).
  if (auto name = f.get_string("general.name")) {
    std::string lower(*name);
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower.find("phi-3") != std::string::npos || lower.find("phi3") != std::string::npos) {
      for (int32_t id : v.special_ids) v.attrs[static_cast<size_t>(id)] |= attr_rstrip;
      if (int32_t id = v.find("</s>"); id >= 0) v.attrs[static_cast<size_t>(id)] |= attr_rstrip;
      for (const char* t : {"<unk>", "<s>", "<|endoftext|>"}) {
        if (int32_t id = v.find(t); id >= 0) v.attrs[static_cast<size_t>(id)] &= ~attr_rstrip;
      }
    }
  }

  for (int b = 0; b < 256; ++b) {
    int32_t id = -1;
    if (v.kind == vocab_kind::spm) {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "<0x%02X>", b);
      id = v.find(hex);
      if (id < 0) id = v.find(std::string(1, static_cast<char>(b)));
      if (id < 0) id = v.unk_id;
    } else {
      id = v.find(unicode::cpt_to_utf8(unicode::byte_to_bpe_cpt(static_cast<uint8_t>(b))));
    }
    v.byte_tokens_[b] = id;
  }
  return v;
}

}  // namespace cortex
