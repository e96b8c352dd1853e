"""stories260K greedy completions over the wire equal llama.cpp's text
(../shared/golden), streamed and not streamed, from Python and the CLI."""

import json
import os
import subprocess
import unittest

from tests.e2e import support


class GoldenOverTheWireTest(support.ServerTestCase):
    def setUp(self):
        self.cases = support.golden_cases()
        self.assertGreaterEqual(len(self.cases), 4)

    def request(self, case):
        if case["prompt"] is not None:
            return {"prompt": case["prompt"]}
        return {"tokens": case["tokens"]}

    def test_streamed_equals_golden(self):
        c = self.client()
        for case in self.cases:
            with self.subTest(prompt=case["prompt"], tokens=case["tokens"]):
                s = c.submit(max_tokens=case["n_gen"], temperature=0, **self.request(case))
                text, fin = s.result()
                types = [e["t"] for e in s.events]
                self.assertEqual(types[0], "accepted")
                self.assertEqual(types[-1], "finished")
                self.assertTrue(all(t == "chunk" for t in types[1:-1]), types)
                self.assertGreater(types.count("chunk"), 1, "a streamed request sends chunks")
                self.assertEqual([e["seq"] for e in s.events], list(range(len(s.events))))
                self.assertEqual(text, case["text"])
                self.assertEqual(fin["reason"], "length")
                self.assertEqual(fin["usage"]["completion_tokens"], case["n_gen"])
                self.assertEqual(fin["usage"]["prompt_tokens"], len(case["tokens"]))
                self.assertEqual(s.accepted["prompt_tokens"], len(case["tokens"]))

    def test_non_streamed_equals_golden(self):
        c = self.client()
        for case in self.cases:
            with self.subTest(prompt=case["prompt"], tokens=case["tokens"]):
                s = c.submit(stream=False, max_tokens=case["n_gen"], temperature=0, **self.request(case))
                events = list(s)
                self.assertEqual([e["t"] for e in events], ["accepted", "finished"])
                self.assertEqual([e["seq"] for e in events], [0, 1])
                self.assertEqual(events[1]["text"], case["text"])
                self.assertEqual(events[1]["reason"], "length")

    def test_token_ids_and_logprobs_when_asked(self):
        case = self.cases[0]
        c = self.client()
        s = c.submit(prompt=case["prompt"], max_tokens=16, temperature=0, want_token_ids=True, logprobs=3)
        text, fin = s.result()
        chunks = [e for e in s.events if e["t"] == "chunk"]
        ids = [i for e in chunks for i in e["token_ids"]]
        greedy = support.golden_token_ids(0)[:16]
        self.assertEqual(ids, greedy)
        lps = [lp for e in chunks for lp in e.get("logprobs", [])] + list(fin.get("logprobs") or [])
        self.assertEqual([lp["id"] for lp in lps], greedy)
        for lp in lps:
            self.assertLessEqual(lp["lp"], 0.0)
            self.assertEqual(len(lp["top"]), 3)
            self.assertEqual(lp["top"][0][0], lp["id"], "greedy picks the most likely token")

    def cortex(self, *args, timeout_s=60):
        """Runs build/bin/cortex <args> --endpoint <server>; skips if the command does not exist."""
        exe = os.path.join(support.BIN_DIR, "cortex")
        r = subprocess.run([exe] + list(args) + ["--endpoint", self.server.endpoint], capture_output=True,
                           timeout=timeout_s)
        if b"unknown command" in r.stderr:
            self.skipTest("`cortex %s` does not exist yet" % args[0])
        self.assertEqual(r.returncode, 0, r.stderr.decode(errors="replace"))
        return r.stdout.decode("utf-8")

    def test_cli_submit_streams_same_text(self):
        for case in self.cases[:2]:
            args = ["submit", "--prompt", case["prompt"], "--max-tokens", str(case["n_gen"]), "--temperature", "0"]
            with self.subTest(prompt=case["prompt"], stream=True):
                self.assertEqual(self.cortex(*args), case["text"] + "\n")
            with self.subTest(prompt=case["prompt"], stream=False):
                self.assertEqual(self.cortex(*(args + ["--no-stream"])), case["text"] + "\n")

    def test_cli_submit_json_prints_the_protocol_messages(self):
        case = self.cases[2]
        out = self.cortex("submit", "--json", "--prompt", case["prompt"], "--max-tokens", str(case["n_gen"]),
                          "--temperature", "0")
        msgs = [json.loads(line) for line in out.splitlines() if line.strip()]
        self.assertEqual(msgs[0]["t"], "accepted")
        self.assertEqual(msgs[-1]["t"], "finished")
        self.assertEqual([m["seq"] for m in msgs], list(range(len(msgs))))
        self.assertEqual("".join(m.get("text", "") for m in msgs[1:]), case["text"])

    def test_cli_health_stats_models_cancel(self):
        self.assertEqual(json.loads(self.cortex("health"))["status"], "ready")
        self.assertIn("kv_blocks_used", json.loads(self.cortex("stats")))
        self.assertEqual(json.loads(self.cortex("models"))["models"][0]["n_vocab"], 512)
        self.cortex("cancel", "--id", "no-such-request")

    def test_python_module_main_streams_same_text(self):
        case = self.cases[1]
        script = os.path.join(support.REPO_DIR, "clients", "python", "cortexstream.py")
        r = subprocess.run(["/usr/bin/python3", script, "--endpoint", self.server.endpoint,
                            "--max-tokens", str(case["n_gen"]), "--temperature", "0", case["prompt"]],
                           capture_output=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr.decode(errors="replace"))
        self.assertEqual(r.stdout.decode("utf-8"), case["text"] + "\n")


if __name__ == "__main__":
    unittest.main()


class GoldenWithF16CacheTest(support.ServerTestCase):
    """cortexd's default cache type, f16 (llama.cpp's), changes no token of
    the golden (F32-cache) text; stats report the type and its size."""

    SERVER_ARGS = ("--kv-type", "f16")

    def test_greedy_text_and_stats(self):
        c = self.client()
        for case in support.golden_cases():
            if case["prompt"] is None:
                continue
            with self.subTest(prompt=case["prompt"]):
                text, fin = c.complete(prompt=case["prompt"], max_tokens=case["n_gen"], temperature=0)
                self.assertEqual(text, case["text"])
        st = c.stats()
        self.assertEqual(st["kv_type"], "f16")
        # stories260K: 5 layers x (K, V) x 4 KV heads x head_dim 8 x 2 bytes.
        self.assertEqual(st["kv_bytes_per_token"], 640)
