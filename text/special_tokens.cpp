#include "text/special_tokens.hpp"

#include <algorithm>
#include <initializer_list>
#include <string_view>

namespace cortex {
namespace {

using texts = std::initializer_list<std::string_view>;

bool is_one_of(std::string_view t, texts list) { return std::find(list.begin(), list.end(), t) != list.end(); }

// Token texts that name a special id, in priority order. llama.cpp takes the
// first match in its hash map's order, so a vocabulary with several of them
// gets an arbitrary one there; here the earliest listed text wins.
const texts k_eot = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>", "<EOT>", "_<EOT>",
    "[EOT]", "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>", "<end_of_utterance>",
};
const texts k_eom = {"<|eom_id|>"};
const texts k_fim_pre = {
    "<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<\xef\xbd\x9c" "fim\xe2\x96\x81" "begin\xef\xbd\x9c>",
    "<PRE>", "\xe2\x96\x81<PRE>", "<|code_prefix|>", "<|prefix|>",
};
const texts k_fim_suf = {
    "<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<\xef\xbd\x9c" "fim\xe2\x96\x81hole\xef\xbd\x9c>",
    "<SUF>", "\xe2\x96\x81<SUF>", "<|code_suffix|>", "<|suffix|>",
};
const texts k_fim_mid = {
    "<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<\xef\xbd\x9c" "fim\xe2\x96\x81" "end\xef\xbd\x9c>",
    "<MID>", "\xe2\x96\x81<MID>", "<|code_middle|>", "<|middle|>",
};
const texts k_fim_pad = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"};
const texts k_fim_rep = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"};
const texts k_fim_sep = {"<|file_sep|>"};

// Texts that end generation (each also becomes a control token). llama.cpp
// lists "</s>" too since PaddleOCR; left out here because that turns Phi-3's
// user-defined "</s>" into a control token, unlike the llama.cpp our Phi-3
// golden data comes from (c392e50), which splits it out of text and
// renders it. Gemma 4 is unaffected: llama.cpp makes its "</s>" an
// ordinary token again (see below).
const texts k_eog = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>", "<end_of_turn>",
    "<|endoftext|>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]", "<|end_of_text|>",
    "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
    "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>", "[e~[",
};

// gpt-oss: always rendered, so user-defined whatever the file says.
const texts k_rendered = {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"};

void mark_control(vocab& v, int32_t id) { v.attrs[static_cast<size_t>(id)] |= attr_control; }

// Sets `id` (when unset) to the token of the first listed text the
// vocabulary has, and makes that token a control token.
void detect_id(vocab& v, int32_t& id, texts list) {
  if (id >= 0) return;
  for (std::string_view t : list) {
    if (const int32_t found = v.find(t); found >= 0) {
      id = found;
      mark_control(v, id);
      return;
    }
  }
}

int32_t eog_with_text(const vocab& v, std::string_view text) {
  for (int32_t id : v.eog_ids) {
    if (v.texts[static_cast<size_t>(id)] == text) return id;
  }
  return -1;
}

void erase_eog(vocab& v, int32_t id) { v.eog_ids.erase(std::find(v.eog_ids.begin(), v.eog_ids.end(), id)); }

}  // namespace

void detect_special_tokens(vocab& v) {
  detect_id(v, v.eot_id, k_eot);
  detect_id(v, v.eom_id, k_eom);
  detect_id(v, v.fim_pre_id, k_fim_pre);
  detect_id(v, v.fim_suf_id, k_fim_suf);
  detect_id(v, v.fim_mid_id, k_fim_mid);
  detect_id(v, v.fim_pad_id, k_fim_pad);
  detect_id(v, v.fim_rep_id, k_fim_rep);
  detect_id(v, v.fim_sep_id, k_fim_sep);

  v.eog_ids.clear();
  for (int32_t id : {v.fim_pad_id, v.fim_rep_id, v.fim_sep_id}) {
    if (id >= 0) v.eog_ids.push_back(id);
  }
  for (int32_t i = 0; i < v.n_tokens(); ++i) {
    const std::string& t = v.texts[static_cast<size_t>(i)];
    if (is_one_of(t, k_eog)) {
      v.eog_ids.push_back(i);
      mark_control(v, i);
    } else if (is_one_of(t, k_rendered)) {
      v.attrs[static_cast<size_t>(i)] = attr_user_defined;
    }
  }
  for (int32_t id : {v.eos_id, v.eot_id, v.eom_id}) {
    if (id >= 0) v.eog_ids.push_back(id);
  }
  std::sort(v.eog_ids.begin(), v.eog_ids.end());
  v.eog_ids.erase(std::unique(v.eog_ids.begin(), v.eog_ids.end()), v.eog_ids.end());

  // gpt-oss (o200k_harmony) and solar-open end turns with "<|return|>" or
  // "<|call|>"/"<|calls|>"; their "<|end|>" only closes a message.
  const int32_t end_id = eog_with_text(v, "<|end|>");
  const bool has_call = eog_with_text(v, "<|call|>") >= 0 || eog_with_text(v, "<|calls|>") >= 0;
  const bool has_return = eog_with_text(v, "<|return|>") >= 0;
  const bool has_flush = eog_with_text(v, "<|flush|>") >= 0;
  if (end_id >= 0 && has_call && (has_return || has_flush)) {
    erase_eog(v, end_id);
    v.attrs[static_cast<size_t>(end_id)] = attr_user_defined;
  }
  // Gemma 4 (and PaddleOCR): "</s>" is ordinary text there, even when it
  // ends generation by id.
  const int32_t s_id = eog_with_text(v, "</s>");
  if (s_id >= 0 && eog_with_text(v, "<|tool_response>") >= 0) {
    erase_eog(v, s_id);
    v.attrs[static_cast<size_t>(s_id)] = attr_normal;
  }
}

}  // namespace cortex
