"""curl drives a real cortexd over HTTP (http.md): a non-stream chat whose
text equals the ZeroMQ path's, an SSE stream with its exact framing
(`data: <json>\\n\\n` events, the last `data: [DONE]`), the health probes,
and keep-alive (two requests on one connection)."""

import json
import shutil
import subprocess

from tests.e2e import support

MESSAGES = [{"role": "user", "content": "Tell me a story about a dog."}]
MAX_TOKENS = 24


class HttpCurlTest(support.ServerTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        text, fin = cls.server.client().complete(messages=MESSAGES, max_tokens=MAX_TOKENS, temperature=0)
        cls.reference = text
        cls.reference_usage = fin["usage"]

    def setUp(self):
        self.curl = shutil.which("curl")
        if self.curl is None:
            self.fail("curl is not installed (scripts/setup installs it)")

    def run_curl(self, *args, input=None):
        r = subprocess.run([self.curl, "-sS", "--max-time", "30"] + list(args), input=input, capture_output=True,
                           timeout=60)
        self.assertEqual(r.returncode, 0, "curl %s failed: %s" % (" ".join(args), r.stderr.decode()))
        return r.stdout

    def post_json(self, path, body, *args):
        return self.run_curl(*args, "-H", "Content-Type: application/json", "--data-binary", "@-",
                             self.server.http + path, input=json.dumps(body).encode())

    def test_chat_non_stream(self):
        out = self.post_json("/v1/chat/completions",
                             {"messages": MESSAGES, "max_tokens": MAX_TOKENS, "temperature": 0},
                             "-w", "\n%{http_code} %{content_type}")
        body, status = out.rsplit(b"\n", 1)
        code, ctype = status.decode().split(" ", 1)
        self.assertEqual(code, "200", body)
        self.assertTrue(ctype.startswith("application/json"), ctype)
        doc = json.loads(body)
        self.assertEqual(doc["object"], "chat.completion")
        self.assertEqual(doc["choices"][0]["message"], {"role": "assistant", "content": self.reference})
        self.assertEqual(doc["usage"]["prompt_tokens"], self.reference_usage["prompt_tokens"])
        self.assertEqual(doc["usage"]["completion_tokens"], self.reference_usage["completion_tokens"])

    def test_chat_sse_stream_framing(self):
        out = self.post_json("/v1/chat/completions",
                             {"messages": MESSAGES, "max_tokens": MAX_TOKENS, "temperature": 0, "stream": True,
                              "stream_options": {"include_usage": True}},
                             "-N", "-D", "-")
        head, sep, body = out.partition(b"\r\n\r\n")
        self.assertTrue(sep, out[:500])
        lines = head.decode().split("\r\n")
        self.assertTrue(lines[0].startswith("HTTP/1.1 200"), lines[0])
        headers = {k.lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:])}
        self.assertTrue(headers.get("content-type", "").startswith("text/event-stream"), headers)
        # Every event is exactly one "data: ...\n\n"; the stream ends with [DONE].
        self.assertTrue(body.endswith(b"data: [DONE]\n\n"), body[-200:])
        events = body.decode("utf-8").split("\n\n")
        self.assertEqual(events[-1], "", "nothing after the last blank line")
        events = events[:-1]
        for e in events:
            self.assertTrue(e.startswith("data: ") and "\n" not in e, "malformed SSE event %r" % e)
        self.assertEqual(events[-1], "data: [DONE]")
        self.assertEqual(sum(e == "data: [DONE]" for e in events), 1)
        chunks = [json.loads(e[len("data: "):]) for e in events[:-1]]
        text = ""
        finishes = []
        for i, c in enumerate(chunks):
            self.assertEqual(c["object"], "chat.completion.chunk")
            self.assertEqual(c["id"], chunks[0]["id"], "one id for the whole stream")
            for ch in c["choices"]:
                self.assertEqual(ch["index"], 0)
                if i == 0:
                    self.assertEqual(ch["delta"].get("role"), "assistant", "the first chunk carries the role")
                else:
                    self.assertNotIn("role", ch["delta"])
                text += ch["delta"].get("content") or ""
                if ch["finish_reason"]:
                    finishes.append(ch["finish_reason"])
        self.assertEqual(text, self.reference)
        self.assertEqual(finishes, ["length"] if self.reference_usage["completion_tokens"] == MAX_TOKENS else ["stop"])
        self.assertEqual(chunks[-1]["choices"], [], "the usage chunk comes last, with no choices")
        self.assertEqual(chunks[-1]["usage"]["completion_tokens"], self.reference_usage["completion_tokens"])
        self.assertGreater(len(chunks), 3, "tokens are streamed as produced")

    def test_health_probes(self):
        for path, status in (("/health/live", "live"), ("/health/ready", "ready"), ("/health/startup", "started")):
            with self.subTest(path):
                out = self.run_curl("-w", "\n%{http_code}", self.server.http + path)
                body, code = out.rsplit(b"\n", 1)
                self.assertEqual(code, b"200", body)
                self.assertEqual(json.loads(body)["status"], status)

    def test_keep_alive_two_requests_one_connection(self):
        # Two URLs on one command line: curl reuses the connection when the
        # server keeps it open; num_connects is 0 for the reused one.
        out = self.run_curl("-o", "/dev/null", "-o", "/dev/null", "-w", "%{http_code} %{num_connects}\n",
                            self.server.http + "/health/live", self.server.http + "/v1/models")
        self.assertEqual(out.decode().split("\n")[:2], ["200 1", "200 0"])
        # A POST, then --next a GET: still one connection.
        body = json.dumps({"messages": MESSAGES, "max_tokens": 4, "temperature": 0})
        out = self.run_curl("-o", "/dev/null", "-w", "%{http_code} %{num_connects}\n",
                            "-H", "Content-Type: application/json", "-d", body,
                            self.server.http + "/v1/chat/completions",
                            "--next", "-o", "/dev/null", "-w", "%{http_code} %{num_connects}\n",
                            self.server.http + "/metrics")
        self.assertEqual(out.decode().split("\n")[:2], ["200 1", "200 0"])
