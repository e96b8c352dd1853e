#include "text/vocab.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "text/special_tokens.hpp"
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

int32_t vocab::find(std::string_view text) const { return token_to_id_.find(text); }

int32_t vocab::merge_rank(std::string_view left, std::string_view right) const {
  return merge_ranks_.find(left, ' ', right);
}

expected<vocab> vocab::from_gguf(const gguf::file& f) {
  vocab v;
  const auto model = f.get_string(k_model);
  if (!model) return fail(errc::malformed, std::string(k_model) + " is missing (no tokenizer in this file)");
  v.model_name = std::string(*model);
  if (auto pre = f.get_string(k_pre)) v.pre_name = std::string(*pre);
  if (v.model_name == "llama") {
    v.kind = vocab_kind::spm;
  } else if (v.model_name == "gpt2") {
    v.kind = vocab_kind::bpe;
  } else if (v.model_name == "gemma4") {
    v.kind = vocab_kind::bpe;
    v.pre_name = "gemma4";  // the model implies its pre-tokenizer, whatever the file says
  } else if (v.model_name == "bert") {
    v.kind = vocab_kind::wpm;  // tokenizer.ggml.pre (e.g. "bert-bge") does not change WordPiece
  } else {
    return fail(errc::unsupported, std::string(k_model) + " = '" + v.model_name +
                                           "' is not supported (supported: llama, gpt2, gemma4, bert)");
  }

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
  size_t n_token_bytes = 0;
  for (std::string_view t : *tokens) n_token_bytes += t.size();
  v.token_to_id_.reserve(static_cast<size_t>(n), n_token_bytes);
  for (int32_t i = 0; i < n; ++i) {
    std::string text((*tokens)[static_cast<size_t>(i)]);
    if (text.empty()) text = "[EMPTY_" + std::to_string(i) + "]";  // as the reference does
    if (const int32_t first = v.token_to_id_.insert(text, i); first >= 0) {
      return fail(errc::malformed, std::string(k_tokens) + ": duplicate token '" + text + "' at ids " +
                        std::to_string(first) + " and " + std::to_string(i));
    }
    v.max_token_len = std::max(v.max_token_len, static_cast<int32_t>(std::min<size_t>(text.size(), INT32_MAX)));
    v.texts.push_back(std::move(text));
  }

  // Defaults per tokenizer family, then what the file says.
  if (v.kind == vocab_kind::spm) {
    v.bos_id = 1; v.eos_id = 2; v.unk_id = 0;
    v.add_bos = true;  // SentencePiece files without add_bos_token add BOS
    v.add_space_prefix = true;
    v.clean_spaces = false;
  } else if (v.kind == vocab_kind::wpm) {
    // BERT's conventional ids: [CLS] 101 as BOS, [UNK] 100, [SEP] 102, [PAD] 0.
    v.bos_id = 101; v.unk_id = 100; v.sep_id = 102; v.pad_id = 0;
    v.add_bos = true;
    v.add_sep = true;
    v.clean_spaces = true;
  } else {
    const auto* merges = f.get_string_array(k_merges);
    if (!merges) {
      return fail(errc::malformed, std::string(k_merges) + " is missing or not a string array (needed by " +
                                       v.model_name + " tokenizers)");
    }
    size_t n_merge_bytes = 0;
    for (std::string_view m : *merges) n_merge_bytes += m.size();
    v.merge_ranks_.reserve(merges->size(), n_merge_bytes);
    for (size_t r = 0; r < merges->size(); ++r) {
      const std::string_view m = (*merges)[r];
      if (m.size() < 3 || m.find(' ', 1) == std::string_view::npos) {
        return fail(errc::malformed, std::string(k_merges) + "[" + std::to_string(r) + "] = '" + std::string(m) +
                          "' is not 'left right'");
      }
      v.merge_ranks_.insert(m, static_cast<int32_t>(r));  // a repeated merge keeps its first rank
    }
    const std::string pre_name = v.pre_name.empty() ? "default" : v.pre_name;
    const auto pre = pre_tokenizer_from_name(pre_name);
    if (!pre) return fail(errc::unsupported, std::string(k_pre) + " = '" + pre_name + "' is not a supported pre-tokenizer");
    v.pre = *pre;
    if (v.model_name == "gpt2") {
      v.bos_id = 11; v.eos_id = 11;
    }  // gemma4 has no default special tokens
    v.add_bos = pre->add_bos;
    v.clean_spaces = pre->clean_spaces;
  }

  const std::pair<std::string_view, int32_t*> ids[] = {
      {"tokenizer.ggml.bos_token_id", &v.bos_id},     {"tokenizer.ggml.eos_token_id", &v.eos_id},
      {"tokenizer.ggml.eot_token_id", &v.eot_id},     {"tokenizer.ggml.eom_token_id", &v.eom_id},
      {"tokenizer.ggml.unknown_token_id", &v.unk_id}, {"tokenizer.ggml.padding_token_id", &v.pad_id},
      {"tokenizer.ggml.seperator_token_id", &v.sep_id},  // sic: the key as GGUF spells it
      {"tokenizer.ggml.fim_pre_token_id", &v.fim_pre_id}, {"tokenizer.ggml.fim_suf_token_id", &v.fim_suf_id},
      {"tokenizer.ggml.fim_mid_token_id", &v.fim_mid_id}, {"tokenizer.ggml.fim_pad_token_id", &v.fim_pad_id},
      {"tokenizer.ggml.fim_rep_token_id", &v.fim_rep_id}, {"tokenizer.ggml.fim_sep_token_id", &v.fim_sep_id},
      // older names of the first three
      {"tokenizer.ggml.prefix_token_id", &v.fim_pre_id},  {"tokenizer.ggml.suffix_token_id", &v.fim_suf_id},
      {"tokenizer.ggml.middle_token_id", &v.fim_mid_id},
  };
  for (const auto& [key, id] : ids) {
    if (status s = read_special_id(f, key, n, *id); !s) return s;
  }
  for (const auto& [key, flag] : {std::pair<std::string_view, bool*>{"tokenizer.ggml.add_bos_token", &v.add_bos},
                                  {"tokenizer.ggml.add_eos_token", &v.add_eos},
                                  {"tokenizer.ggml.add_space_prefix", &v.add_space_prefix},
                                  {"tokenizer.ggml.add_sep_token", &v.add_sep}}) {
    if (status s = read_flag(f, key, *flag); !s) return s;
  }
  if (v.kind == vocab_kind::wpm) {
    if (status s = read_flag(f, "tokenizer.ggml.normalizer.lowercase", v.lowercase); !s) return s;
    v.strip_accents = v.lowercase;
    if (status s = read_flag(f, "tokenizer.ggml.normalizer.strip_accents", v.strip_accents); !s) return s;
    // encode(add_special) frames the text with [CLS] ... [SEP] whatever
    // add_bos_token says, and a word that cannot be spelt becomes [UNK].
    if (v.bos_id < 0) return fail(errc::malformed, "bert tokenizer: tokenizer.ggml.bos_token_id ([CLS]) is missing or out of range");
    if (v.sep_id < 0) return fail(errc::malformed, "bert tokenizer: tokenizer.ggml.seperator_token_id ([SEP]) is missing or out of range");
    if (v.unk_id < 0) return fail(errc::malformed, "bert tokenizer: tokenizer.ggml.unknown_token_id ([UNK]) is missing or out of range");
    v.add_bos = true;
  }
  // Gemma 4 files may say false, but its prompts start with BOS (llama.cpp overrides it too).
  if (v.pre_name == "gemma4") v.add_bos = true;
  if (v.add_bos && v.bos_id < 0) return fail(errc::malformed, "tokenizer.ggml.add_bos_token is true but there is no BOS token");
  if (v.add_eos && v.eos_id < 0) return fail(errc::malformed, "tokenizer.ggml.add_eos_token is true but there is no EOS token");

  detect_special_tokens(v);

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
    char hex[8];
    std::snprintf(hex, sizeof(hex), "<0x%02X>", b);
    if (v.kind == vocab_kind::wpm) {
      id = -1;  // WordPiece has no byte tokens: unknown words become [UNK]
    } else if (v.kind == vocab_kind::spm) {
      id = v.find(hex);
      if (id < 0) id = v.find(std::string(1, static_cast<char>(b)));
      if (id < 0) id = v.unk_id;
    } else if (!v.pre.byte_encode) {
      id = v.find(hex);
    } else {
      id = v.find(unicode::cpt_to_utf8(unicode::byte_to_bpe_cpt(static_cast<uint8_t>(b))));
    }
    v.byte_tokens_[b] = id;
  }
  return v;
}

}  // namespace cortex
