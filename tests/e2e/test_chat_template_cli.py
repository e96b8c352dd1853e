"""`cortex template` renders every golden chat case byte for byte
(../shared/golden/chat, made by Python's jinja2 as transformers renders),
fails template errors with exit 1 and the message on stderr, and takes
bos/eos and the template from a GGUF; `cortex tokenize` reads
vocabulary-only GGUF files."""

import json
import os
import subprocess
import tempfile
import unittest

from tests.e2e import support

CHAT_DIR = os.path.join(support.SHARED_DIR, "golden", "chat")
VOCAB_DIR = os.path.join(support.SHARED_DIR, "golden", "tokenizer", "vocab")
CORTEX = os.path.join(support.BIN_DIR, "cortex")


def run(args, stdin=None):
    return subprocess.run([CORTEX] + args, input=stdin, capture_output=True, timeout=60)


class TemplateCliTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def write_input(self, obj):
        path = os.path.join(self.tmp.name, "input.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(obj, f, ensure_ascii=False)
        return path

    @support.needs_reference_data

    @support.needs_reference_data
    def test_every_golden_case(self):
        with open(os.path.join(CHAT_DIR, "cases.json"), encoding="utf-8") as f:
            cases = json.load(f)["cases"]
        self.assertEqual(len(cases), 102)
        for case in cases:
            with self.subTest(case=case["id"]):
                inp = {"messages": case["messages"], "add_generation_prompt": case["add_generation_prompt"],
                       "bos_token": case["bos_token"], "eos_token": case["eos_token"]}
                inp.update(case["vars"])
                tmpl = os.path.join(CHAT_DIR, "templates", case["template"] + ".jinja")
                r = run(["template", "--template", tmpl, "--input", self.write_input(inp)])
                if "expected" in case:
                    self.assertEqual(r.returncode, 0, r.stderr.decode())
                    self.assertEqual(r.stdout.decode("utf-8"), case["expected"])
                else:
                    self.assertEqual(r.returncode, 1)
                    self.assertEqual(r.stdout, b"")
                    message = case["expected_error"].split(": ", 1)[1]
                    self.assertIn(message, r.stderr.decode("utf-8"))

    def test_null_or_absent_tokens_are_undefined_and_tools_none(self):
        tmpl = os.path.join(self.tmp.name, "t.jinja")
        with open(tmpl, "w") as f:
            f.write("{{ bos_token is defined }} {{ eos_token is defined }} {{ tools is none }} "
                    "{{ documents is none }} {{ add_generation_prompt }} {{ x }}\n")
        r = run(["template", "--template", tmpl, "--input", "-"],
                stdin=json.dumps({"messages": [], "bos_token": None, "x": 7}).encode())
        self.assertEqual(r.returncode, 0, r.stderr.decode())
        self.assertEqual(r.stdout, b"False False True True True 7")  # the template's last newline is dropped

    @support.needs_reference_data

    @support.needs_reference_data
    def test_model_gives_template_and_tokens(self):
        vocab = os.path.join(VOCAB_DIR, "ggml-vocab-llama3.gguf")
        inp = {"messages": [{"role": "user", "content": "Hi"}]}
        r = run(["template", "--model", vocab, "--input", self.write_input(inp)])
        self.assertEqual(r.returncode, 0, r.stderr.decode())
        self.assertEqual(r.stdout.decode(), "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
                                            "<|start_header_id|>assistant<|end_header_id|>\n\n")
        # A vocabulary without a template gets ChatML.
        spm = os.path.join(VOCAB_DIR, "ggml-vocab-llama-spm.gguf")
        inp["add_generation_prompt"] = False
        r = run(["template", "--model", spm, "--input", self.write_input(inp)])
        self.assertEqual(r.returncode, 0, r.stderr.decode())
        self.assertEqual(r.stdout.decode(), "<|im_start|>user\nHi<|im_end|>\n")

    def test_bad_input_and_bad_template(self):
        tmpl = os.path.join(self.tmp.name, "bad.jinja")
        with open(tmpl, "w") as f:
            f.write("ok\n{% for m in messages %}")
        r = run(["template", "--template", tmpl, "--input", self.write_input({"messages": []})])
        self.assertEqual(r.returncode, 1)
        self.assertIn("line 2", r.stderr.decode())
        r = run(["template", "--template", tmpl, "--input", "-"], stdin=b"[1, 2]")
        self.assertEqual(r.returncode, 1)
        self.assertIn("JSON object", r.stderr.decode())
        self.assertEqual(run(["template", "--input", "-"], stdin=b"{}").returncode, 2)
        r = run(["template", "--help"])
        self.assertEqual(r.returncode, 0)
        self.assertIn("--template", r.stdout.decode())


@support.needs_reference_data
class TokenizeVocabOnlyTest(unittest.TestCase):
    def test_vocab_only_file_tokenizes_like_llama_cpp(self):
        with open(os.path.join(support.SHARED_DIR, "golden", "tokenizer", "llama3.public.json")) as f:
            case = json.load(f)["cases"][0]
        with tempfile.NamedTemporaryFile(suffix=".txt") as t:
            t.write(bytes.fromhex(case["text_hex"]))
            t.flush()
            r = run(["tokenize", "--model", os.path.join(VOCAB_DIR, "ggml-vocab-llama3.gguf"),
                     "--file", t.name, "--no-bos", "--json"])
        self.assertEqual(r.returncode, 0, r.stderr.decode())
        self.assertEqual(json.loads(r.stdout), case["ids"])


if __name__ == "__main__":
    unittest.main()
