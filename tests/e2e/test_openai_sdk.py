"""The official OpenAI Node SDK (`openai` from npm, installed by
scripts/setup into tests/e2e/node/node_modules) drives a real cortexd over
HTTP: tests/e2e/node/openai_sdk_test.mjs, run with `node --test`.

This wrapper starts cortexd, computes the references the node test compares
with (the ZeroMQ path's answers to the same chat and completion requests,
through the Python wire client; the golden llama.cpp generations and
embeddings of ../shared/golden), runs node, and afterwards checks on the
wire `stats` that the request the SDK aborted mid-stream was cancelled."""

import json
import os
import shutil
import subprocess
import tempfile

from tests.e2e import support

NODE_DIR = os.path.join(support.REPO_DIR, "tests", "e2e", "node")
NODE_TEST = os.path.join(NODE_DIR, "openai_sdk_test.mjs")
NODE_OVERLOAD_TEST = os.path.join(NODE_DIR, "openai_sdk_overload_test.mjs")
EMBED_GOLDEN = support.reference_file(os.path.join("embeddings", "stories260K.json"))
MESSAGES = [{"role": "system", "content": "You tell short stories."},
            {"role": "user", "content": "Once upon a time there was a cat."}]
MAX_TOKENS = 40


def wire_logprobs(stream):
    """Reads a wire stream asked with logprobs: ([{id, lp, top}], text, finished)."""
    lps, text = [], ""
    for ev in stream:
        if ev["t"] == "chunk":
            lps.extend(ev.get("logprobs") or [])
            text += ev.get("text", "")
        elif ev["t"] == "finished":
            return lps, text + ev.get("text", ""), ev
    raise AssertionError("stream ended without finished")


class NodeTestCase(support.ServerTestCase):
    def setUp(self):
        node = shutil.which("node")
        if node is None:
            self.fail("node is not installed (scripts/setup needs nodejs and npm)")
        if not os.path.isdir(os.path.join(NODE_DIR, "node_modules", "openai")):
            self.fail("the openai SDK is not installed: run scripts/setup (npm ci --prefix tests/e2e/node)")
        self.node = node

    def run_node(self, script, **env):
        """Runs `node --test script` against this server; fails with its output and the server log."""
        env = dict(os.environ, CORTEX_OPENAI_BASE_URL=self.server.http + "/v1", **env)
        r = subprocess.run([self.node, "--test", "--test-reporter=spec", script], env=env, capture_output=True,
                           timeout=120)
        out = r.stdout.decode("utf-8", "replace") + r.stderr.decode("utf-8", "replace")
        print(out)
        self.assertEqual(r.returncode, 0, "node --test failed:\n%s\ncortexd log:\n%s" % (out, self.server.log()))


class OpenAiSdkTest(NodeTestCase):
    def references(self):
        c = self.client()
        m = c.models()[0]
        ref = {"model_id": m["name"], "n_ctx": m["n_ctx"]}

        s = c.submit(messages=MESSAGES, max_tokens=MAX_TOKENS, temperature=0)
        accepted = next(iter(s))
        self.assertEqual(accepted["t"], "accepted")
        text, fin = s.result()
        self.assertGreater(len(text), 8, "the greedy answer is long enough to cut with a stop string")
        ref["chat"] = {"messages": MESSAGES, "max_tokens": MAX_TOKENS, "text": text,
                       "prompt_tokens": fin["usage"]["prompt_tokens"],
                       "completion_tokens": fin["usage"]["completion_tokens"], "finish": fin["reason"]}

        seeded = {"messages": MESSAGES, "max_tokens": MAX_TOKENS, "temperature": 0.9, "seed": 1234}
        ref["chat_seeded"] = dict(seeded, text=c.complete(messages=MESSAGES, max_tokens=MAX_TOKENS,
                                                          temperature=0.9, seed=1234)[0])
        self.assertNotEqual(ref["chat_seeded"]["text"], text, "sampling differs from greedy")

        lps, lp_text, _ = wire_logprobs(c.submit(messages=MESSAGES, max_tokens=MAX_TOKENS, temperature=0,
                                                 logprobs=3))
        self.assertEqual(lp_text, text)
        ref["chat_logprobs"] = lps

        prompt = "Lily and Tom"
        lps, lp_text, _ = wire_logprobs(c.submit(prompt=prompt, max_tokens=16, temperature=0, logprobs=3))
        ref["completion_logprobs"] = {"prompt": prompt, "max_tokens": 16, "text": lp_text, "lp": lps}

        ref["golden"] = [g for g in support.golden_cases() if g["prompt"]][:2]
        with open(EMBED_GOLDEN) as f:
            ref["embeddings"] = json.load(f)["cases"]
        return ref

    def test_openai_node_sdk(self):
        ref = self.references()
        finished_before = self.client().stats()["requests_finished"]
        with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
            json.dump(ref, f)
            f.flush()
            self.run_node(NODE_TEST, CORTEX_E2E_REFERENCE=f.name)
        # The aborted stream (8 choices) ended as cancelled or client_gone on the engine side too.
        finished = self.client().stats()["requests_finished"]
        gone = sum(finished.get(k, 0) - finished_before.get(k, 0) for k in ("cancelled", "client_gone"))
        self.assertGreaterEqual(gone, 1, "requests_finished %r -> %r" % (finished_before, finished))
        self.assertEqual(self.client().stats()["kv_blocks_used"], 0)


class OpenAiSdkOverloadTest(NodeTestCase):
    SERVER_ARGS = ("--max-running", "1", "--max-waiting", "1")

    def test_rate_limit_error(self):
        self.run_node(NODE_OVERLOAD_TEST)
