"""`cortex embed` against llama.cpp's llama-embedding (golden/embeddings:
mean pooling over every token incl. BOS, L2 norm): each case by text (our
tokenizer) and by ids, within 1e-4 per component; usage errors exit 2."""

import json
import os
import subprocess
import unittest

from tests.e2e import support
from tests.e2e.support import BIN_DIR, SHARED_DIR

CORTEX = os.path.join(BIN_DIR, "cortex")
MODELS = ("stories260K", "tiny-llama-f32", "tiny-qwen2-f32")


def model_path(name):
    if name == "stories260K.gguf":
        return support.MODEL_PATH
    p = os.path.join(SHARED_DIR, "golden", "models", name)
    return p if os.path.exists(p) else os.path.join(SHARED_DIR, "models", name)


def embed(*args):
    return subprocess.run([CORTEX, "embed", *args], capture_output=True, text=True, timeout=120)


class CliEmbedTest(unittest.TestCase):
    def test_golden_cases_by_text_and_by_ids(self):
        # Without ../shared, the shipped model's copy only (tests/data/reference).
        models = MODELS if support.REFERENCE_DATA_PRESENT else MODELS[:1]
        for name in models:
            with open(support.reference_file(os.path.join("embeddings", name + ".json"))) as f:
                golden = json.load(f)
            model = model_path(golden["model"])
            for case in golden["cases"]:
                ids = ",".join(str(i) for i in case["ids"])
                for how in (["--prompt", case["text"]], ["--tokens", ids, "--chunk", "7"]):
                    with self.subTest(model=name, text=case["text"][:30], how=how[0]):
                        r = embed("--model", model, "--json", "--threads", "2", *how)
                        self.assertEqual(r.returncode, 0, r.stderr)
                        out = json.loads(r.stdout)
                        self.assertEqual(out["prompt_tokens"], len(case["ids"]))
                        ref = case["embedding"]
                        self.assertEqual(len(out["embedding"]), len(ref))
                        worst = max(abs(a - b) for a, b in zip(out["embedding"], ref))
                        self.assertLessEqual(worst, 1e-4)
            # Without --json: the components on one line.
            r = embed("--model", model, "--tokens", "1,2,3")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(len(r.stdout.split()), len(golden["cases"][0]["embedding"]))

    def test_usage_errors_exit_2_with_a_message(self):
        model = model_path("stories260K.gguf")
        for args in (["--prompt", "x", "--tokens", "1"], [], ["--tokens", "1,100000"], ["--tokens", "a,b"]):
            with self.subTest(args=args):
                r = embed("--model", model, *args)
                self.assertEqual(r.returncode, 2, r.stdout)
                self.assertTrue(r.stderr.startswith("cortex: "), r.stderr)


if __name__ == "__main__":
    unittest.main()
