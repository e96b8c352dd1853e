#!/usr/bin/env python3
"""Makes the encoder goldens in tests/data/encoder/: tiny random-weight
encoder files written by `cortex make-model` (F32), and what llama.cpp's
llama-server computes on them:

  tiny-bert-f32.json,        embeddings of text and token-id inputs (1, 7
  tiny-nomic-bert-f32.json   and 500 tokens among them), all in one request,
                             for pooling mean, cls and last (L2-normalised,
                             the server's default) and none (raw rows)
  tiny-bert-rerank-f32.json  /v1/rerank scores of documents for a query

and the same embeddings for files written here with llama.cpp's gguf-py
(not by cortex):

  tiny-jina-bert-v2-f32.gguf  architecture jina-bert-v2 (ALiBi, a GEGLU FFN
                              whose ffn_up holds [gate; up]), 3 heads so that
                              both of ggml's ALiBi slope series are used, and
                              the bert-bge WordPiece vocabulary cut to 4096
                              tokens, as the real jina-embeddings-v2-*-en
                              files use WordPiece
  tiny-modern-bert-f32.gguf   architecture modern-bert: global and windowed
                              layers (a symmetric window of 15), two rope
                              bases, a GeGLU FFN, no blk.0.attn_norm, a
                              classifier head (cls, cls.norm, cls.output), and
                              a byte-level BPE vocabulary (GPT-2's cut to 4091
                              tokens plus [UNK] [CLS] [SEP] [PAD] [MASK],
                              pre-tokenizer modern-bert), as ModernBERT's;
                              tiny-modern-bert-rerank-f32.json is the same
                              file's /v1/rerank (llama-server --rerank)

Usage: LLAMA_CPP_BIN=DIR PYTHONPATH=<llama.cpp>/gguf-py [CORTEX_BIN_DIR=build/bin]
       [CORTEX_SHARED_DIR=../shared] scripts/make_encoder_goldens.py [SHAPE...]
Server settings: -c 2048 -np 4 -b 2048 -ub 2048 -t 2 -fa off (flash attention
would round K and V to F16). Texts are tokenized by the server's /tokenize
(with special tokens: [CLS] ... [SEP]); the goldens record those ids.
"""
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "data", "encoder")
SEED = 30
SERVER_ARGS = ["-c", "2048", "-np", "4", "-b", "2048", "-ub", "2048", "-t", "2", "-fa", "off"]

TEXTS = [
    "Hello world, this is a test.",
    "Ça va? Très bien, merci! Straße über Äpfel.",
    "The quick brown fox jumps over the lazy dog; then it sleeps (for a while) under the old tree.",
]


def id_inputs():
    # 1, 7 and 500 tokens; the long one is [CLS] + seeded ids + [SEP].
    state = 12345
    ids = []
    for _ in range(498):
        state = (state * 1103515245 + 12345) % (1 << 31)
        ids.append(1000 + state % 3096)
    return [[2023], [101, 1996, 2829, 3899, 1012, 2000, 102], [101] + ids + [102]]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(port, path, body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return json.loads(r.read())
    except urllib.error.HTTPError as e:
        sys.exit(f"make_encoder_goldens: {path}: {e.code} {e.read().decode()}")


class server:
    def __init__(self, binary, model, extra):
        self.port = free_port()
        self.proc = subprocess.Popen([binary, "-m", model, "--port", str(self.port), "--host", "127.0.0.1"] +
                                     SERVER_ARGS + extra, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(600):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except Exception:
                time.sleep(0.1)
        self.proc.kill()
        sys.exit("make_encoder_goldens: llama-server did not start")

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.proc.terminate()
        self.proc.wait()


def make_model(cortex, shape, path):
    subprocess.run([cortex, "make-model", "--shape", shape, "--type", "f32", "--seed", str(SEED), "--out", path],
                   check=True, stdout=subprocess.DEVNULL)


def encoder_writer(path, arch, name, n_embd, n_head, n_ff, n_layer, norm_eps):
    """A gguf-py writer with the keys every tiny encoder file has: 512
    positions, the sizes, LayerNorm epsilon, bidirectional, pooling mean, F32."""
    import gguf
    w = gguf.GGUFWriter(path, arch)
    w.add_name(name)
    w.add_context_length(512)
    w.add_embedding_length(n_embd)
    w.add_block_count(n_layer)
    w.add_feed_forward_length(n_ff)
    w.add_head_count(n_head)
    w.add_layer_norm_eps(norm_eps)
    w.add_causal_attention(False)
    w.add_pooling_type(gguf.PoolingType.MEAN)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    return w


def write_tiny_jina(path, vocab_path):
    """tiny-jina-bert-v2: 2 layers, 24 wide, 3 heads, FFN 32 (ffn_up 64 rows:
    [gate; up], no bias), 512 positions, pooling mean; seeded normals."""
    import numpy as np
    import gguf
    n_vocab, n_embd, n_head, n_ff, n_layer = 4096, 24, 3, 32, 2
    src = gguf.GGUFReader(vocab_path)
    field = lambda k: src.fields[k].contents()
    w = encoder_writer(path, "jina-bert-v2", "synthetic tiny-jina-bert-v2 f32 (random weights)",
                       n_embd, n_head, n_ff, n_layer, 1e-12)
    w.add_tokenizer_model("bert")
    w.add_tokenizer_pre("jina-v2-en")  # what the real jina-embeddings-v2-*-en files say
    w.add_token_list(field("tokenizer.ggml.tokens")[:n_vocab])
    w.add_token_types(field("tokenizer.ggml.token_type")[:n_vocab])
    w.add_token_type_count(2)
    for key in ("unknown", "seperator", "padding", "cls", "mask"):  # the vocabulary's special tokens, as it has them
        w.add_uint32(f"tokenizer.ggml.{key}_token_id", int(field(f"tokenizer.ggml.{key}_token_id")))
    rng = np.random.default_rng(SEED)
    mat = lambda rows, cols: (rng.standard_normal((rows, cols)) / np.sqrt(cols)).astype(np.float32)
    norm = lambda: (1.0 + 0.1 * rng.standard_normal(n_embd)).astype(np.float32)
    bias = lambda n: (0.02 * rng.standard_normal(n)).astype(np.float32)
    w.add_tensor("token_embd.weight", rng.standard_normal((n_vocab, n_embd)).astype(np.float32))
    w.add_tensor("token_types.weight", rng.standard_normal((2, n_embd)).astype(np.float32))
    w.add_tensor("token_embd_norm.weight", norm())
    w.add_tensor("token_embd_norm.bias", bias(n_embd))
    for i in range(n_layer):
        for t in ("attn_q", "attn_k", "attn_v", "attn_output"):
            w.add_tensor(f"blk.{i}.{t}.weight", mat(n_embd, n_embd) * (2.0 if t == "attn_q" else 1.0))
            w.add_tensor(f"blk.{i}.{t}.bias", bias(n_embd))
        w.add_tensor(f"blk.{i}.attn_output_norm.weight", norm())
        w.add_tensor(f"blk.{i}.attn_output_norm.bias", bias(n_embd))
        w.add_tensor(f"blk.{i}.ffn_up.weight", mat(2 * n_ff, n_embd))
        w.add_tensor(f"blk.{i}.ffn_down.weight", mat(n_embd, n_ff))
        w.add_tensor(f"blk.{i}.ffn_down.bias", bias(n_embd))
        w.add_tensor(f"blk.{i}.layer_output_norm.weight", norm())
        w.add_tensor(f"blk.{i}.layer_output_norm.bias", bias(n_embd))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def write_tiny_modern_bert(path, vocab_path):
    """tiny-modern-bert: 4 layers (0 and 3 attend the whole input, 1 and 2 a
    symmetric window of 15: |i - j| <= 7), 24 wide, 3 heads of 8, FFN 32
    (ffn_up 64 rows: [gate; up], GeGLU), rope bases 160000 (global) and 10000
    (local), no blk.0.attn_norm, LayerNorms without bias, a classifier head
    (cls, cls.norm, cls.output), pooling mean; the GPT-2 BPE vocabulary cut
    to 4091 tokens (and the merges that make them) plus ModernBERT's five
    special tokens; seeded normals."""
    import numpy as np
    import gguf
    n_embd, n_head, n_ff, n_layer, n_keep = 24, 3, 32, 4, 4091
    src = gguf.GGUFReader(vocab_path)
    field = lambda k: src.fields[k].contents()
    tokens = field("tokenizer.ggml.tokens")[:n_keep]
    kept = set(tokens)
    merges = [m for m in field("tokenizer.ggml.merges") if m.replace(" ", "", 1) in kept]
    assert all(a in kept and b in kept for a, b in (m.split(" ") for m in merges))
    specials = ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"]  # ModernBERT's, in its order
    tokens += specials
    n_vocab = len(tokens)
    types = field("tokenizer.ggml.token_type")[:n_keep] + [int(gguf.TokenType.CONTROL)] * len(specials)
    special_id = {t: n_keep + i for i, t in enumerate(specials)}
    w = encoder_writer(path, "modern-bert", "synthetic tiny ModernBERT f32 (random weights)",
                       n_embd, n_head, n_ff, n_layer, 1e-5)
    w.add_rope_freq_base(160000.0)
    w.add_rope_freq_base_swa(10000.0)
    w.add_rope_scaling_type(gguf.RopeScalingType.NONE)
    w.add_sliding_window(15)
    w.add_sliding_window_pattern(3)
    w.add_hidden_act("gelu")
    w.add_vocab_size(n_vocab)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("modern-bert")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(special_id["[CLS]"])
    w.add_eos_token_id(special_id["[SEP]"])
    w.add_sep_token_id(special_id["[SEP]"])
    w.add_unk_token_id(special_id["[UNK]"])
    w.add_pad_token_id(special_id["[PAD]"])
    w.add_mask_token_id(special_id["[MASK]"])
    w.add_add_bos_token(True)  # as the converter writes them for modern-bert
    w.add_add_eos_token(True)
    w.add_add_sep_token(True)
    rng = np.random.default_rng(SEED)
    mat = lambda rows, cols: (rng.standard_normal((rows, cols)) / np.sqrt(cols)).astype(np.float32)
    norm = lambda: (1.0 + 0.1 * rng.standard_normal(n_embd)).astype(np.float32)
    w.add_tensor("token_embd.weight", rng.standard_normal((n_vocab, n_embd)).astype(np.float32))
    w.add_tensor("token_embd_norm.weight", norm())
    for i in range(n_layer):
        if i != 0:  # layer 0 reads the normed embeddings as they are
            w.add_tensor(f"blk.{i}.attn_norm.weight", norm())
        qkv = mat(3 * n_embd, n_embd)
        qkv[:n_embd] *= 2.0  # sharper attention, so the window shows
        w.add_tensor(f"blk.{i}.attn_qkv.weight", qkv)
        w.add_tensor(f"blk.{i}.attn_output.weight", mat(n_embd, n_embd))
        w.add_tensor(f"blk.{i}.ffn_norm.weight", norm())
        w.add_tensor(f"blk.{i}.ffn_up.weight", mat(2 * n_ff, n_embd))
        w.add_tensor(f"blk.{i}.ffn_down.weight", mat(n_embd, n_ff))
    w.add_tensor("output_norm.weight", norm())
    w.add_tensor("cls.weight", mat(n_embd, n_embd))
    w.add_tensor("cls.norm.weight", norm())
    w.add_tensor("cls.output.weight", mat(1, n_embd))
    w.add_tensor("cls.output.bias", (0.02 * rng.standard_normal(1)).astype(np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def rounded(x):
    """Floats to 8 significant digits (the goldens are compared within 1e-4)."""
    if isinstance(x, list):
        return [rounded(v) for v in x]
    return float("%.8g" % x)


def embedding_goldens(binary, cortex, shape, made_with, write=None):
    model = os.path.join(OUT, shape + "-f32.gguf")
    made_by = f"cortex make-model --shape {shape} --type f32 --seed {SEED}"
    if write:
        made_by = write(model)
    else:
        make_model(cortex, shape, model)
    inputs = []
    with server(binary, model, ["--embeddings", "--pooling", "mean"]) as s:
        for t in TEXTS:
            inputs.append({"text": t, "ids": post(s.port, "/tokenize", {"content": t, "add_special": True})["tokens"]})
    inputs += [{"ids": ids} for ids in id_inputs()]
    doc = {"model": shape + "-f32.gguf", "made_with": made_with,
           "made_by": made_by,
           "normalised": {"mean": True, "cls": True, "last": True, "none": False},
           "inputs": inputs, "embeddings": {}}
    for pooling in ["mean", "cls", "last", "none"]:
        with server(binary, model, ["--embeddings", "--pooling", pooling]) as s:
            res = post(s.port, "/embeddings", {"content": [x["ids"] for x in inputs]})
            res.sort(key=lambda r: r["index"])
            rows = [r["embedding"] for r in res]
            rows = [r[0] for r in rows] if pooling != "none" else rows
            doc["embeddings"][pooling] = rounded(rows) if write else rows
    with open(os.path.join(OUT, shape + "-f32.json"), "w") as f:
        json.dump(doc, f)
        f.write("\n")


def main():
    bin_dir = os.environ.get("LLAMA_CPP_BIN")
    if not bin_dir:
        sys.exit("make_encoder_goldens: set LLAMA_CPP_BIN to the folder of llama-server")
    binary = os.path.join(bin_dir, "llama-server")
    cortex = os.path.join(os.environ.get("CORTEX_BIN_DIR", os.path.join(ROOT, "build", "bin")), "cortex")
    os.makedirs(OUT, exist_ok=True)
    made_with = ("llama.cpp de3ff81 (2026-09-28) llama-server " + " ".join(SERVER_ARGS) +
                 " --embeddings --pooling P (rerank: --rerank)")

    # shapes to remake (tiny-bert, tiny-nomic-bert, tiny-jina-bert-v2, tiny-modern-bert, tiny-bert-rerank); none: all
    only = sys.argv[1:]
    for shape in ["tiny-bert", "tiny-nomic-bert"]:
        if not only or shape in only:
            embedding_goldens(binary, cortex, shape, made_with)
    shared = os.environ.get("CORTEX_SHARED_DIR", os.path.join(ROOT, "..", "shared"))
    vocab = os.path.join(shared, "golden", "tokenizer", "vocab", "ggml-vocab-bert-bge.gguf")

    def jina(path):
        write_tiny_jina(path, vocab)
        return f"scripts/make_encoder_goldens.py write_tiny_jina (gguf-py, numpy seed {SEED})"

    def modern(path):
        write_tiny_modern_bert(path, os.path.join(shared, "golden", "tokenizer", "vocab", "ggml-vocab-gpt-2.gguf"))
        return f"scripts/make_encoder_goldens.py write_tiny_modern_bert (gguf-py, numpy seed {SEED})"
    for shape, write in [("tiny-jina-bert-v2", jina), ("tiny-modern-bert", modern)]:
        if not only or shape in only:
            embedding_goldens(binary, cortex, shape, made_with, write)
    if not only or "tiny-modern-bert" in only:
        # The same file scored by llama-server --rerank (pooling rank over its
        # mean): the mean row through cls, GELU, cls.norm and cls.output.
        model = os.path.join(OUT, "tiny-modern-bert-f32.gguf")
        rerank_golden(binary, model, "tiny-modern-bert-rerank-f32", made_with,
                      f"scripts/make_encoder_goldens.py write_tiny_modern_bert (gguf-py, numpy seed {SEED})",
                      "[CLS] query [SEP] [SEP] document [SEP] (llama-server's format for a vocabulary with add_bos, "
                      "add_eos and add_sep, EOS and SEP both [SEP], and no rerank template)")
    if not only or "tiny-bert-rerank" in only:
        model = os.path.join(OUT, "tiny-bert-rerank-f32.gguf")
        make_model(cortex, "tiny-bert-rerank", model)
        rerank_golden(binary, model, "tiny-bert-rerank-f32", made_with,
                      f"cortex make-model --shape tiny-bert-rerank --type f32 --seed {SEED}",
                      "[CLS] query [SEP] document (llama-server's format for a vocabulary with add_sep and no rerank template)")
    print("wrote", OUT)


def rerank_golden(binary, model, stem, made_with, made_by, prompt):
    """/v1/rerank of documents for a query on `model`, into <stem>.json."""
    query = "What is the capital of France?"
    documents = ["Paris is the capital and largest city of France.", "The quick brown fox jumps over the lazy dog.",
                 "Berlin is the capital of Germany.", "France is a country in Europe; its capital is Paris.",
                 "Bananas are rich in potassium."]
    with server(binary, model, ["--rerank"]) as s:
        tok = lambda t: post(s.port, "/tokenize", {"content": t, "add_special": False})["tokens"]
        res = post(s.port, "/v1/rerank", {"model": "tiny", "query": query, "documents": documents, "top_n": 3})
        full = post(s.port, "/v1/rerank", {"model": "tiny", "query": query, "documents": documents})
        doc = {"model": os.path.basename(model), "made_with": made_with, "made_by": made_by, "prompt": prompt,
               "query": query, "query_ids": tok(query), "documents": documents,
               "document_ids": [tok(d) for d in documents],
               "top_n": 3, "results": res["results"], "results_all": full["results"]}
    with open(os.path.join(OUT, stem + ".json"), "w") as f:
        json.dump(doc, f)
        f.write("\n")


if __name__ == "__main__":
    main()
