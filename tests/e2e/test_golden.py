"""stories260K greedy completions over the wire equal llama.cpp's text
(../shared/golden), streamed and not streamed, from Python and the CLI."""

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

    def test_cli_submit_streams_same_text(self):
        exe = os.path.join(support.BIN_DIR, "cortex")
        probe = subprocess.run([exe, "submit", "--help"], capture_output=True, text=True, timeout=30)
        if "unknown command" in probe.stderr:
            self.skipTest("`cortex submit` does not exist yet")
        case = self.cases[0]
        r = subprocess.run([exe, "submit", "--endpoint", self.server.endpoint, "--prompt", case["prompt"],
                            "--max-tokens", str(case["n_gen"]), "--temperature", "0"],
                           capture_output=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr.decode(errors="replace"))
        out = r.stdout.decode("utf-8")
        self.assertEqual(out.rstrip("\n"), case["text"].rstrip("\n"))

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
