"""cortex_load's HTTP transport against a real cortexd: a small load over
HTTP (and the same over ZeroMQ) ends with every request ok, exactly the
planned tokens, a TTFT per request, and the figures in the JSON."""

import json
import os
import subprocess
import tempfile
import unittest

from tests.e2e import support

STREAMS, REQUESTS, OUTPUT = 4, 8, 16


class LoadBenchHttpTest(support.ServerTestCase):
    def run_load(self, *target):
        exe = os.path.join(support.BIN_DIR, "cortex_load")
        if not os.path.exists(exe):
            self.skipTest("cortex_load not built (bench/ disabled)")
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "load.json")
            p = subprocess.run([exe, *target, "--streams", str(STREAMS), "--requests", str(REQUESTS),
                                "--prompt-tokens", "32", "--output-tokens", str(OUTPUT), "--quiet",
                                "--server-pid", str(self.server.proc.pid), "--json", out],
                               capture_output=True, text=True, timeout=120)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            with open(out) as f:
                return json.load(f)

    def check(self, doc, mode, exact_tokens=False):
        self.assertEqual(doc["mode"], mode)
        r = doc["results"]
        self.assertEqual(r["requests_ok"], REQUESTS, r)
        self.assertEqual(r["completion_tokens"], REQUESTS * OUTPUT, r)
        self.assertEqual(r["errors"], {}, r)
        self.assertEqual(r["ttft_ms"]["n"], REQUESTS, r)
        self.assertGreater(r["tok_per_s"], 0, r)
        self.assertIn("server_cpu_s", r)
        for q in doc["requests"]:
            self.assertEqual((q["outcome"], q["completion_tokens"]), ("length", OUTPUT), q)
            if exact_tokens:  # token ids (wire) or logprobs (HTTP): every token counted where it arrived
                self.assertEqual(q["tokens_seen"], OUTPUT, q)
            else:  # one per HTTP event with text: never more than were generated
                self.assertLessEqual(q["tokens_seen"], OUTPUT, q)
                self.assertGreater(q["tokens_seen"], 0, q)

    def test_http_transport(self):
        self.check(self.run_load("--http", self.server.http, "--model", support.MODEL_PATH), "http")

    def test_http_transport_with_logprobs(self):
        doc = self.run_load("--http", self.server.http, "--model", support.MODEL_PATH, "--http-logprobs")
        self.check(doc, "http", exact_tokens=True)
        self.assertEqual(doc["results"]["itl_ms"]["n"], REQUESTS * (OUTPUT - 1))

    def test_wire_transport_same_server(self):
        self.check(self.run_load("--endpoint", self.server.endpoint), "wire", exact_tokens=True)

    def test_http_needs_model_and_a_url(self):
        exe = os.path.join(support.BIN_DIR, "cortex_load")
        if not os.path.exists(exe):
            self.skipTest("cortex_load not built (bench/ disabled)")
        p = subprocess.run([exe, "--http", self.server.http], capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--model", p.stderr)
        p = subprocess.run([exe, "--http", "https://example.org", "--model", support.MODEL_PATH],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 1)
        self.assertIn("http://HOST:PORT", p.stderr)


if __name__ == "__main__":
    unittest.main()
