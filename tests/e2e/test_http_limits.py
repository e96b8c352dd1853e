"""The HTTP gateway's limits and bad input (http.md), against a real
cortexd: malformed JSON and wrong fields are 400 in OpenAI's error shape,
an unknown path is 404, a body over 8 MiB is 413 before it is read, a client
that sends no complete request head is closed, the connection cap answers
503, a client that hangs up during a non-stream request has it cancelled
at once (KV blocks freed), and SIGTERM turns the probes and new requests to
503 draining while a running stream ends with "shutdown"."""

import http.client
import json
import signal
import socket
import subprocess
import time

from tests.e2e import http_support, support

MESSAGES = [{"role": "user", "content": "Once upon a time"}]


class HttpLimitsTest(support.ServerTestCase):
    def assert_openai_error(self, status, headers, body, want_status, code, param=None):
        self.assertEqual(status, want_status, body)
        self.assertTrue(headers.get("content-type", "").startswith("application/json"), headers)
        doc = json.loads(body)
        self.assertEqual(set(doc), {"error"}, doc)
        e = doc["error"]
        self.assertEqual(set(e), {"message", "type", "param", "code"}, e)
        self.assertTrue(e["message"], "the message says what to fix")
        self.assertEqual(e["type"], "invalid_request_error" if want_status < 500 else "server_error")
        self.assertEqual(e["code"], code)
        if param is None:
            self.assertIsNone(e["param"])
        else:  # the field, or a path into it (`stop[0]`)
            self.assertRegex(e["param"] or "", r"^%s($|\[|\.)" % param)
        return e

    def post_raw(self, path, body):
        return http_support.request(self.server.http, "POST", path, body, {"Content-Type": "application/json"})

    def test_malformed_json_is_400(self):
        for label, body in (("truncated", b'{"messages": ['), ("not json", b"hello"), ("empty", b""),
                            ("bad utf-8", b'{"prompt": "\xff\xfe"}')):
            with self.subTest(label):
                e = self.assert_openai_error(*self.post_raw("/v1/chat/completions", body), 400, "malformed")
                self.assertIn("JSON", e["message"])

    def test_json_not_an_object_and_wrong_fields_are_400_naming_the_field(self):
        self.assert_openai_error(*self.post_raw("/v1/completions", b"[1, 2]"), 400, "malformed")
        for field, value in (("max_tokens", "ten"), ("temperature", -1), ("messages", "hi"), ("n", 0),
                             ("stop", [1]), ("logit_bias", {"x": 1})):
            with self.subTest(field):
                body = {"messages": MESSAGES, "max_tokens": 4, field: value}
                self.assert_openai_error(*self.post_raw("/v1/chat/completions", json.dumps(body).encode()), 400,
                                         "invalid_param", param=field)

    def test_unknown_path_is_404(self):
        for method, path in (("GET", "/v2/models"), ("POST", "/v1/chat"), ("GET", "/")):
            with self.subTest(path):
                status, headers, body = http_support.request(self.server.http, method, path)
                self.assertEqual(status, 404, body)
                e = json.loads(body)["error"]
                self.assertEqual(e["type"], "invalid_request_error")
                self.assertIn(path, e["message"])

    def test_error_keeps_the_connection_usable(self):
        host, port = self.server.http[len("http://"):].split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=10)
        try:
            conn.request("POST", "/v1/completions", body=b"{oops", headers={"Content-Type": "application/json"})
            r = conn.getresponse()
            self.assertEqual(r.status, 400)
            r.read()
            conn.request("POST", "/v1/completions", body=json.dumps({"prompt": "Once", "max_tokens": 4}).encode(),
                         headers={"Content-Type": "application/json"})
            r = conn.getresponse()
            self.assertEqual(r.status, 200)
            self.assertEqual(json.loads(r.read())["usage"]["completion_tokens"], 4)
        finally:
            conn.close()

    def test_body_over_8_mib_is_413_without_reading_it(self):
        # Only the head, announcing 9 MiB: the answer must come without the body.
        host, port = self.server.http[len("http://"):].split(":")
        with socket.create_connection((host, int(port)), timeout=10) as s:
            s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Content-Length: %d\r\n\r\n" % (9 << 20))
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
        self.assertTrue(data.startswith(b"HTTP/1.1 413"), data[:200])

    def test_incomplete_head_is_closed_after_10_s(self):
        host, port = self.server.http[len("http://"):].split(":")
        with socket.create_connection((host, int(port)), timeout=20) as s:
            t0 = time.monotonic()
            s.sendall(b"GET /health/live HTTP/1.1\r\nHost: x\r\n")  # never finished
            while s.recv(4096):
                pass
            elapsed = time.monotonic() - t0
        self.assertGreaterEqual(elapsed, 9.5)
        self.assertLess(elapsed, 13.0)

    def test_hang_up_during_non_stream_request_cancels_it(self):
        c = self.client()
        n_ctx = c.models()[0]["n_ctx"]
        before = c.stats()["requests_finished"]
        http_support.hang_up_mid_request(self.server.http, "/v1/chat/completions",
                                         {"messages": MESSAGES, "max_tokens": n_ctx - 64, "ignore_eos": True,
                                          "temperature": 0, "n": 4})
        t0 = time.monotonic()

        # Choices 2..4 are submitted once choice 1's prompt is computed (they
        # take it from the prefix cache), so 1 to 4 engine requests exist when
        # the client hangs up: every one of them ends client_gone.
        def gone():
            s = c.stats()
            n = s["requests_finished"]["client_gone"] - before["client_gone"]
            return s if n >= 1 and s["running"] == 0 and s["waiting"] == 0 else None
        s = support.wait_until(gone, 5, what="the choices' requests ended client_gone")
        elapsed = time.monotonic() - t0
        self.assertEqual(s["kv_blocks_used"], 0)
        self.assertEqual(s["requests_finished"]["length"], before["length"], "none ran to max_tokens")
        self.assertLess(elapsed, 1.0, "cancelled at once")
        ended = s["requests_finished"]["client_gone"] - before["client_gone"]
        self.assertLessEqual(ended, 4)
        print("hang-up to %d requests client_gone, KV 0: %.0f ms" % (ended, elapsed * 1000))


class HttpConnectionCapTest(support.ServerTestCase):
    SERVER_ARGS = ("--http-max-connections", "4")

    def test_connection_over_the_cap_gets_503(self):
        host, port = self.server.http[len("http://"):].split(":")
        held = [socket.create_connection((host, int(port)), timeout=10) for _ in range(4)]
        try:
            # The four are open (each answers); a fifth is refused with 503.
            for s in held:
                s.sendall(b"GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n")
                self.assertTrue(s.recv(4096).startswith(b"HTTP/1.1 200"))
            status, headers, body = http_support.request(self.server.http, "GET", "/health/live")
            self.assertEqual(status, 503, body)
            self.assertIn("retry-after", headers)
        finally:
            for s in held:
                s.close()
        support.wait_until(lambda: http_support.request(self.server.http, "GET", "/health/live")[0] == 200, 5,
                           what="a connection slot freed")


class HttpDrainTest(support.ServerTestCase):
    """SIGTERM while a stream runs: the probes and new requests say
    draining (503, Retry-After), and past the grace period the stream ends
    with finish_reason "shutdown" and [DONE]; the process exits 0."""

    SERVER_ARGS = ("--grace-ms", "1500")

    def test_draining(self):
        n_ctx = self.client().models()[0]["n_ctx"]
        # 8 x ~1950 tokens: far more than 1.5 s of work on this machine.
        body = {"messages": MESSAGES, "max_tokens": n_ctx - 100, "ignore_eos": True, "n": 8, "stream": True}
        curl = subprocess.Popen(["curl", "-sSN", "--max-time", "30", "-H", "Content-Type: application/json",
                                 "--data-binary", json.dumps(body), self.server.http + "/v1/chat/completions"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            first = curl.stdout.read(6)
            self.assertEqual(first, b"data: ")
            self.server.proc.send_signal(signal.SIGTERM)
            ready = support.wait_until(
                lambda: (lambda s: s if s[0] == 503 else None)(http_support.request(self.server.http, "GET",
                                                                                    "/health/ready")),
                1, what="/health/ready 503")
            self.assertEqual(json.loads(ready[2])["status"], "draining")
            self.assertEqual(http_support.request(self.server.http, "GET", "/health/live")[0], 200)
            self.assertEqual(http_support.request(self.server.http, "GET", "/health/startup")[0], 200)
            st, headers, data = http_support.request(self.server.http, "POST", "/v1/completions",
                                                     {"prompt": "Once", "max_tokens": 4})
            self.assertEqual(st, 503, data)
            self.assertIn("retry-after", headers)
            e = json.loads(data)["error"]
            self.assertEqual((e["type"], e["code"]), ("server_error", "draining"))
            out, err = curl.communicate(timeout=30)
        finally:
            if curl.poll() is None:
                curl.kill()
                curl.communicate()
        rest = first + out
        self.assertTrue(rest.endswith(b"data: [DONE]\n\n"), rest[-300:])
        finishes = [c["finish_reason"] for ev in rest.decode().split("\n\n") if ev.startswith("data: {")
                    for c in json.loads(ev[6:])["choices"] if c["finish_reason"]]
        # Choices 2..8 start once choice 1's prompt is computed; submitted
        # after SIGTERM they end with shutdown at once. Choice 1 runs alone and
        # may finish its tokens within the grace period (length) or not.
        self.assertEqual(len(finishes), 8, finishes)
        self.assertEqual(finishes.count("shutdown") + finishes.count("length"), 8, finishes)
        self.assertGreaterEqual(finishes.count("shutdown"), 7, finishes)
        self.assertEqual(self.server.stop(), 0)
