#!/usr/bin/env python3
"""Makes tests/data/tokenizer/bert_bge_cases.json: our own WordPiece cases
(multilingual, accented, punctuation-heavy, odd white space and invalid
UTF-8) tokenized by llama.cpp's llama-tokenize on the bert-bge vocabulary,
with special tokens ([CLS] ... [SEP]) and without, and with special-token
text parsed.

Usage: LLAMA_CPP_BIN=DIR scripts/make_wordpiece_goldens.py [VOCAB.gguf]
VOCAB defaults to ../shared/golden/tokenizer/vocab/ggml-vocab-bert-bge.gguf
(relative to the repository root). The expected ids come only from
llama-tokenize; nothing here tokenizes.
"""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "data", "tokenizer", "bert_bge_cases.json")

CASES = [
    # accents and case
    "Ça va? Très bien, merci!",
    "Straße über Äpfel — naïve café résumé",
    "Ångström, Øresund, Łódź, Dvořák, Đakovo",
    "İstanbul ıiIİ ǅemal ǈ",
    "e\u0301 combining acute, o\u0308 combining diaeresis",
    "Tiếng Việt có dấu: Hà Nội, Thành phố Hồ Chí Minh",
    "ÀÁÂÃÄÅàáâãäå ÇÈÉÊË ÑÒÓÔÕÖ ÙÚÛÜÝ",
    # scripts
    "Привет, мир! Как дела? Ёлка ЁЖ",
    "Γειά σου Κόσμε· ΆΈΉΊΌΎΏ ΐΰ",
    "日本語のテキスト、東京タワー。カタカナとひらがな",
    "中文分词测试：你好世界！北京欢迎你",
    "한국어 텍스트입니다. 안녕하세요!",
    "مرحبا بالعالم، كيف حالك؟",
    "שָׁלוֹם עוֹלָם",
    "हिन्दी पाठ, नमस्ते दुनिया।",
    "สวัสดีครับ ภาษาไทย",
    "Ελληνικά and English mixed with русский",
    # punctuation and symbols
    "x^2 + y_1 = z; (a|b) & {c} ~ `d` @home #tag $5 100% <tag> a\\b",
    "...!!!???---***,,,;;;:::'''\"\"\"",
    "«quotes» „German“ ‘single’ “double” – en — em … ellipsis",
    "don't won't it's O'Neil's rock'n'roll",
    "emoji 😀👍🏽 and ♥ ★ ™ © ® € £ ¥ ° ± × ÷",
    "123,456.78 3.14159 1e-9 -42 +7 ½ ² Ⅻ ①",
    "https://example.com/path?query=1&b=2#frag user@mail.org",
    "C++ C# F# .NET Node.js",
    # white space and control characters
    "tabs\tand\nnewlines\r\nand\u00a0nbsp\u3000ideographic\u2003em space",
    "zero\u200bwidth joiner\u200d soft\u00adhyphen\ufeffbom",
    "  leading and trailing spaces   ",
    "bell\x07 escape\x1b delete\x7f",
    # WordPiece continuation and unknown words
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
    "unbelievably uncharacteristically internationalization",
    "Ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３",
    "ﬁnancial ﬂow ﬀ",
    "a" * 120,
    # special-token text in plain input (not parsed as special)
    "[CLS] literal [SEP] text [MASK] and [UNK] [PAD]",
]
# Invalid UTF-8 goes in as bytes.
BYTE_CASES = [b"abc\xff\xfedef \xc3( \xe2\x82 end"]


def tokenize(binary, vocab, data, add_special, parse_special=False):
    with tempfile.NamedTemporaryFile(delete=False) as f:
        f.write(data)
        path = f.name
    try:
        cmd = [binary, "-m", vocab, "-f", path, "--ids", "--log-disable"]
        if not add_special:
            cmd.append("--no-bos")
        if not parse_special:
            cmd.append("--no-parse-special")  # llama-tokenize parses them by default
        out = subprocess.run(cmd, check=True, capture_output=True).stdout.decode().strip().splitlines()[-1]
    finally:
        os.unlink(path)
    return json.loads(out)


def main():
    bin_dir = os.environ.get("LLAMA_CPP_BIN")
    if not bin_dir:
        sys.exit("make_wordpiece_goldens: set LLAMA_CPP_BIN to the folder of llama-tokenize")
    binary = os.path.join(bin_dir, "llama-tokenize")
    vocab = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        ROOT, "..", "shared", "golden", "tokenizer", "vocab", "ggml-vocab-bert-bge.gguf")
    cases = []
    for data in [c.encode() for c in CASES] + BYTE_CASES:
        cases.append({
            "text_hex": data.hex(),
            "ids_special": tokenize(binary, vocab, data, True),
            "ids": tokenize(binary, vocab, data, False),
            "ids_parse_special": tokenize(binary, vocab, data, True, True),
        })
    doc = {
        "vocab": "ggml-vocab-bert-bge.gguf",
        "made_with": "llama.cpp de3ff81 (2026-09-28) llama-tokenize -f FILE --ids [--no-bos] [--no-parse-special]",
        "ids_special": "add_special = true ([CLS] ... [SEP]), parse_special = false",
        "ids": "add_special = false, parse_special = false",
        "ids_parse_special": "add_special = true, parse_special = true",
        "cases": cases,
    }
    # One case a line, so that a change reads as a diff of cases.
    with open(OUT, "w") as f:
        head = {k: v for k, v in doc.items() if k != "cases"}
        f.write(json.dumps(head, ensure_ascii=False)[:-1] + ', "cases": [\n')
        f.write(",\n".join(json.dumps(c) for c in cases))
        f.write("\n]}\n")
    print(f"wrote {len(cases)} cases to {OUT}")


if __name__ == "__main__":
    main()
