"""Access control over HTTP (auth.md, http.md "Errors") on a real cortexd
started with --auth: 401 without or with a wrong key (before the body is
read), 403 for what the tier forbids (consuming nothing), 429 with a
Retry-After that, when honoured, succeeds, two keys isolated, per-key
metrics, open health probes, and the start-up refusal to expose a gateway
without access control."""

import json
import os
import shutil
import subprocess
import time

from tests.e2e import auth_support as A
from tests.e2e import support

SECRETS = {name: A.new_secret() for name in ("alice", "bob", "erin", "dave", "gus")}
TIERS = {
    "free": {"requests_per_minute": 20, "max_tokens": 16, "max_concurrent": 4},
    "pro": {},
    "tiny": {"tokens_per_minute": 40},
    "group": {"requests_per_minute": 3, "max_concurrent": 1},
}
KEYS = [A.key_entry("alice", "free", SECRETS["alice"]), A.key_entry("bob", "pro", SECRETS["bob"]),
        A.key_entry("erin", "free", SECRETS["erin"]), A.key_entry("dave", "tiny", SECRETS["dave"]),
        A.key_entry("gus", "group", SECRETS["gus"])]
CHAT = {"messages": [{"role": "user", "content": "Tell me a story."}], "max_tokens": 4, "temperature": 0}


class AuthHttpTest(A.AuthServerTestCase):
    TIERS, KEYS = TIERS, KEYS

    def call(self, path, body=None, key=None, method="POST", headers=None):
        return A.http_call(self.server.http, method, path, body, key=key, headers=headers)

    def error_of(self, body):
        return json.loads(body)["error"]

    def test_missing_and_wrong_keys_are_401(self):
        for key, headers in ((None, None), ("cs-" + "A" * 43, None), (None, {"Authorization": "Basic Ym9iOnNlY3JldA=="}),
                             (SECRETS["bob"][:-1], None)):
            status, h, body = self.call("/v1/chat/completions", CHAT, key=key, headers=headers)
            self.assertEqual(status, 401, body)
            self.assertEqual(h.get("www-authenticate"), "Bearer")
            err = self.error_of(body)
            self.assertEqual((err["type"], err["code"]), ("authentication_error", "unauthenticated"))
            if key:
                self.assertNotIn(key, body.decode())  # a secret is never echoed
        status, _, _ = self.call("/v1/models", method="GET")
        self.assertEqual(status, 401)
        status, _, body = self.call("/v1/models", method="GET", key=SECRETS["bob"])
        self.assertEqual(status, 200, body)

    def test_curl_with_and_without_the_key(self):
        curl = shutil.which("curl")
        self.assertIsNotNone(curl, "curl is not installed (scripts/setup installs it)")
        body = json.dumps(CHAT)

        def run(*args):
            r = subprocess.run([curl, "-sS", "--max-time", "30", "-o", "/dev/null", "-w", "%{http_code}",
                                "-H", "Content-Type: application/json", "--data-binary", body] + list(args) +
                               [self.server.http + "/v1/chat/completions"], capture_output=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr.decode())
            return r.stdout.decode()

        self.assertEqual(run(), "401")
        self.assertEqual(run("-H", "Authorization: Bearer " + SECRETS["bob"][::-1]), "401")
        self.assertEqual(run("-H", "Authorization: Bearer " + SECRETS["bob"]), "200")

    def test_401_is_answered_before_the_body_is_read(self):
        # A 4 MiB body without a key: refused on the head, the connection closed.
        status, h, body = self.call("/v1/completions", {"prompt": "x" * (4 << 20)})
        self.assertEqual(status, 401)
        self.assertEqual(h.get("connection"), "close")

    def test_health_and_metrics_stay_open(self):
        for path in ("/health/live", "/health/ready", "/health/startup", "/metrics"):
            status, _, body = self.call(path, method="GET")
            self.assertEqual(status, 200, (path, body))

    def test_tier_forbidden_is_403_and_consumes_nothing(self):
        before = self.key_stats("erin")
        status, _, body = self.call("/v1/chat/completions", dict(CHAT, max_tokens=17), key=SECRETS["erin"])
        self.assertEqual(status, 403, body)
        err = self.error_of(body)
        self.assertEqual((err["type"], err["code"]), ("permission_error", "forbidden"))
        self.assertIn("max_tokens 17", err["message"])
        # A charge above the whole minute's tokens is 403 too, not 429.
        status, _, body = self.call("/v1/completions", {"prompt": "Once upon a time", "max_tokens": 40},
                                    key=SECRETS["dave"])
        self.assertEqual(status, 403, body)
        after = self.key_stats("erin")
        self.assertEqual(after["admitted"], before["admitted"])
        self.assertEqual(after["rejected_forbidden"], before["rejected_forbidden"] + 1)
        # Without max_tokens the tier's cap bounds the default: admitted, at most 16 tokens.
        status, _, body = self.call("/v1/completions", {"prompt": "Once upon a time", "temperature": 0},
                                    key=SECRETS["erin"])
        self.assertEqual(status, 200, body)
        self.assertLessEqual(json.loads(body)["usage"]["completion_tokens"], 16)

    def test_burst_over_requests_per_minute_is_429_and_retry_after_works(self):
        # A fresh key bursts a full minute's worth (20), then stops; a slow
        # burst (a sanitized server) earns the one request per 3 s refilled meanwhile.
        ok = 0
        t_burst = time.monotonic()
        while True:
            status, h, body = self.call("/v1/chat/completions", CHAT, key=SECRETS["alice"])
            if status != 200:
                break
            ok += 1
            refilled = int((time.monotonic() - t_burst) / 3.0)
            self.assertLessEqual(ok, 20 + refilled, "more than requests_per_minute admitted")
        self.assertEqual(status, 429, body)
        self.assertGreaterEqual(ok, 20)
        err = self.error_of(body)
        self.assertEqual((err["type"], err["code"]), ("rate_limit_error", "rate_limited"))
        retry_after = int(h["retry-after"])
        self.assertTrue(1 <= retry_after <= 3, retry_after)  # one request per 3 s refills
        # Another key is not slowed by alice's exhaustion.
        t0 = time.monotonic()
        for _ in range(5):
            status, _, body = self.call("/v1/chat/completions", CHAT, key=SECRETS["bob"])
            self.assertEqual(status, 200, body)
        self.assertLess(time.monotonic() - t0, 20)
        time.sleep(retry_after)
        status, _, body = self.call("/v1/chat/completions", CHAT, key=SECRETS["alice"])
        self.assertEqual(status, 200, body)

    def test_choices_and_embedding_inputs_are_one_request(self):
        # n = 2 choices and 3 embedding inputs: one request each for requests_per_minute (3) and
        # max_concurrent (1), whatever the engine sequences they become.
        status, _, body = self.call("/v1/chat/completions", dict(CHAT, n=2), key=SECRETS["gus"])
        self.assertEqual(status, 200, body)
        self.assertEqual(len(json.loads(body)["choices"]), 2)
        status, _, body = self.call("/v1/embeddings", {"input": ["a cat", "a dog", "a big red ball"]}, key=SECRETS["gus"])
        self.assertEqual(status, 200, body)
        self.assertEqual(len(json.loads(body)["data"]), 3)
        status, _, body = self.call("/v1/chat/completions", dict(CHAT, n=3, stream=True), key=SECRETS["gus"])
        self.assertEqual(status, 200, body)
        self.assertNotIn(b'"error"', body)
        status, _, body = self.call("/v1/chat/completions", dict(CHAT, n=2), key=SECRETS["gus"])
        self.assertEqual(status, 429, body)  # the fourth request of the minute
        stats = self.key_stats("gus")
        self.assertEqual((stats["admitted"], stats["running"], stats["rejected_limited"]), (3, 0, 1))

    def test_metrics_count_by_key_id_never_the_secret(self):
        self.call("/v1/chat/completions", CHAT, key=SECRETS["bob"])
        self.call("/v1/chat/completions", CHAT, key="cs-wrong")
        _, _, body = self.call("/metrics", method="GET")
        text = body.decode()
        self.assertGreaterEqual(A.metric_value(text, "cortex_requests_total", endpoint="chat_completions",
                                               reason="length", key="bob") or 0, 1, text)
        self.assertGreaterEqual(A.metric_value(text, "cortex_rejections_total", code="unauthenticated", key="unknown") or 0,
                                1, text)
        for s in SECRETS.values():
            self.assertNotIn(s, text)
        self.assertNotIn("cs-wrong", self.server.log())

    def key_stats(self, key):
        stats = self.server.client().stats()
        return stats["keys"].get(key, {"admitted": 0, "rejected_forbidden": 0})


class AuthMetricsTest(A.AuthServerTestCase):
    """--auth-metrics: /metrics needs a key too; /health/* stay open."""
    TIERS, KEYS = TIERS, KEYS
    SERVER_ARGS = ("--auth-metrics",)

    def test_metrics_need_a_key(self):
        status, h, _ = A.http_call(self.server.http, "GET", "/metrics")
        self.assertEqual(status, 401)
        self.assertEqual(h.get("www-authenticate"), "Bearer")
        status, _, body = A.http_call(self.server.http, "GET", "/metrics", key=SECRETS["bob"])
        self.assertEqual(status, 200)
        self.assertIn(b"cortex_requests_total", body)
        status, _, _ = A.http_call(self.server.http, "GET", "/health/ready")
        self.assertEqual(status, 200)


class ExposureTest(support.unittest.TestCase):
    def run_cortexd(self, *args):
        exe = os.path.join(support.BIN_DIR, "cortexd")
        return subprocess.run([exe, "--model", support.MODEL_PATH] + list(args), capture_output=True, timeout=60)

    def test_non_loopback_bind_without_auth_is_refused(self):
        r = self.run_cortexd("--http", "0.0.0.0:%d" % support.free_port(), "--endpoint", "tcp://127.0.0.1:%d" % support.free_port())
        self.assertEqual(r.returncode, 2, r.stderr.decode())
        self.assertIn("--auth", r.stderr.decode())
        r = self.run_cortexd("--http", "off", "--endpoint", "tcp://0.0.0.0:%d" % support.free_port())
        self.assertEqual(r.returncode, 2, r.stderr.decode())
        self.assertIn("without access control", r.stderr.decode())
        keys = A.KeysFile(TIERS, KEYS)
        try:  # with --auth but no CURVE the wire's secrets would cross the network in clear
            r = self.run_cortexd("--http", "off", "--auth", keys.path, "--endpoint", "tcp://0.0.0.0:%d" % support.free_port())
            self.assertEqual(r.returncode, 2, r.stderr.decode())
            self.assertIn("--curve-secret-key", r.stderr.decode())
        finally:
            keys.close()

    def test_bad_keys_file_is_a_clear_start_error(self):
        keys = A.KeysFile({"free": {"rpm": 3}}, [])
        try:
            r = self.run_cortexd("--http", "off", "--auth", keys.path, "--endpoint", "tcp://127.0.0.1:%d" % support.free_port())
            self.assertEqual(r.returncode, 2)
            self.assertIn("unknown field tiers.free.rpm", r.stderr.decode())
        finally:
            keys.close()


if __name__ == "__main__":
    support.unittest.main()
