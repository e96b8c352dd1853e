"""Access control through the official OpenAI Node SDK (auth.md, issue 10):
tests/e2e/node/openai_sdk_auth_test.mjs, run with `node --test` against a
cortexd started with --auth. The SDK's `apiKey` is the Bearer secret; its
error classes carry the statuses (401 AuthenticationError, 403
PermissionDeniedError, 429 RateLimitError), and its own retry, honouring
Retry-After, gets through a requests_per_minute limit.

This wrapper writes the keys file (secrets hashed with Python's hashlib),
computes the references the node test compares with (the wire path's greedy
answer to the same chat, asked with the same key; llama.cpp's golden
embedding), runs node, and afterwards checks the per-key counters on the
wire `stats` and that no secret reached the log or /metrics."""

import json
import os
import tempfile

from tests.e2e import auth_support as A
from tests.e2e import support
from tests.e2e import test_openai_sdk as sdk

NODE_AUTH_TEST = os.path.join(sdk.NODE_DIR, "openai_sdk_auth_test.mjs")
SECRETS = {name: A.new_secret() for name in ("paula", "quinn", "rita")}
MAX_TOKENS_CAP = 32
REQUESTS_PER_MINUTE = 20  # one every 3 s: the Retry-After after a burst is 3 s, beyond the SDK's own backoff
LEAN_TOKENS_PER_MINUTE = 100  # below a generation's default max_tokens, above the embedded text's prompt
MESSAGES = [{"role": "user", "content": "Tell me a story about a dog."}]
N_FORBIDDEN = 3  # the node test's 403s: max_tokens and max_completion_tokens, streamed and not


class AuthSdkTest(A.AuthServerTestCase, sdk.NodeTestCase):
    TIERS = {"capped": {"max_tokens": MAX_TOKENS_CAP},
             "slow": {"requests_per_minute": REQUESTS_PER_MINUTE},
             "lean": {"tokens_per_minute": LEAN_TOKENS_PER_MINUTE}}
    KEYS = [A.key_entry("paula", "capped", SECRETS["paula"]), A.key_entry("quinn", "slow", SECRETS["quinn"]),
            A.key_entry("rita", "lean", SECRETS["rita"])]

    def references(self):
        c = self.client()
        auth = {"auth": SECRETS["paula"]}
        text, fin = c.complete(messages=MESSAGES, max_tokens=16, temperature=0, extra=auth)
        with open(sdk.EMBED_GOLDEN) as f:
            golden = json.load(f)["cases"][0]
        return {"model": c.models()[0]["name"], "keys": {"capped": SECRETS["paula"], "slow": SECRETS["quinn"], "lean": SECRETS["rita"]},
                "max_tokens_cap": MAX_TOKENS_CAP, "requests_per_minute": REQUESTS_PER_MINUTE,
                "chat": {"messages": MESSAGES, "max_tokens": 16, "text": text, "finish": fin["reason"],
                         "prompt_tokens": fin["usage"]["prompt_tokens"],
                         "completion_tokens": fin["usage"]["completion_tokens"]},
                "embedding": golden}

    def test_openai_node_sdk_with_api_keys(self):
        ref = self.references()
        with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
            json.dump(ref, f)
            f.flush()
            self.run_node(NODE_AUTH_TEST, CORTEX_E2E_REFERENCE=f.name)

        keys = self.client().stats()["keys"]
        paula, quinn = keys["paula"], keys["quinn"]
        self.assertEqual(paula["rejected_forbidden"], N_FORBIDDEN, paula)
        self.assertEqual((paula["rejected_limited"], paula["running"]), (0, 0), paula)
        # quinn: a burst of requests_per_minute, then at least the refused call and the retrying one's first try.
        self.assertGreaterEqual(quinn["admitted"], REQUESTS_PER_MINUTE + 1, quinn)
        self.assertGreaterEqual(quinn["rejected_limited"], 2, quinn)
        self.assertEqual(quinn["rejected_forbidden"], 0, quinn)
        # The embedding was charged its prompt tokens only (nothing generated), and admitted.
        rita = keys["rita"]
        self.assertEqual((rita["admitted"], rita["rejected_forbidden"], rita["rejected_limited"]), (1, 0, 0), rita)
        self.assertEqual(rita["tokens"], len(ref["embedding"]["ids"]), rita)
        _, _, metrics = A.http_call(self.server.http, "GET", "/metrics")
        text = metrics.decode()
        self.assertGreaterEqual(A.metric_value(text, "cortex_rejections_total", code="unauthenticated",
                                               key="unknown") or 0, 1, text)
        self.assertEqual(A.metric_value(text, "cortex_rejections_total", code="forbidden", key="paula"),
                         N_FORBIDDEN, text)
        log = self.server.log(None)
        for s in SECRETS.values():
            self.assertNotIn(s, text)
            self.assertNotIn(s, log)


if __name__ == "__main__":
    support.unittest.main()
