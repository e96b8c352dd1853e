"""`cortex chat` and `cortex submit --messages-json` against the fake ROUTER
(fake_server.py), whose answers are a function of the turns it gets: what
the CLI sends (the whole conversation each turn, the answers appended as
assistant turns), how it streams, and how Ctrl-C cancels an answer without
ending the program. Rendering the turns is the server's business (the fake
has its own stand-in)."""

import json
import os
import signal
import subprocess
import time
import unittest

from tests.e2e import support
from tests.e2e.fake_server import FakeServer, fake_chat_prompt, fake_text

CORTEX = os.path.join(support.BIN_DIR, "cortex")


def answer(turns):
    return fake_text(fake_chat_prompt(turns))


class CliChatTest(unittest.TestCase):
    def setUp(self):
        if not os.path.exists(CORTEX):
            self.skipTest("build/bin/cortex is not built")
        self.server = FakeServer()

    def tearDown(self):
        self.server.close()

    def run_cortex(self, *args, stdin=""):
        return subprocess.run([CORTEX] + list(args) + ["--endpoint", self.server.endpoint, "--timeout-ms", "5000"],
                              input=stdin.encode(), capture_output=True, timeout=60)

    def submits(self):
        return [m for m in self.server.received if m.get("t") == "submit"]

    def test_submit_messages_json(self):
        turns = [{"role": "system", "content": "Be brief."},
                 {"role": "user", "content": [{"type": "text", "text": "Hi"}], "name": "ann"}]
        r = self.run_cortex("submit", "--messages-json", "-", "--chat-template-kwargs", '{"b": 1, "a": [true]}',
                            "--max-tokens", "7", "--temperature", "0", stdin=json.dumps(turns))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.decode(), answer(turns) + "\n")
        sent = self.submits()[-1]
        self.assertEqual(sent["messages"], turns)
        self.assertEqual(list(sent["messages"][1]), ["role", "content", "name"], "key order is kept")
        self.assertEqual(sent["chat_template_kwargs"], {"b": 1, "a": [True]})
        self.assertEqual(list(sent["chat_template_kwargs"]), ["b", "a"])
        self.assertNotIn("prompt", sent)
        self.assertEqual(sent["params"]["max_tokens"], 7)

    def test_submit_messages_json_usage_errors(self):
        for args, stdin, says in [
                (["--messages-json", "-"], "{not json", "is not valid JSON"),
                (["--messages-json", "-"], '{"role": "user"}', "non-empty JSON array"),
                (["--messages-json", "-", "--prompt", "x"], "[]", "give one of"),
                (["--prompt", "x", "--chat-template-kwargs", "{}"], "", "goes with --messages-json"),
                (["--messages-json", "-", "--chat-template-kwargs", "[1]"], '[{"role": "user", "content": "x"}]',
                 "--chat-template-kwargs must be a JSON object")]:
            with self.subTest(args=args):
                r = self.run_cortex("submit", *args, stdin=stdin)
                self.assertEqual(r.returncode, 2)
                self.assertIn(says, r.stderr.decode())
        self.assertEqual(self.submits(), [])

    def test_chat_lines_in_answers_out(self):
        r = self.run_cortex("chat", "--system", "Be brief.", "--max-tokens", "9", "--seed", "3",
                            stdin="Hello there\n\nTell me more\n")
        self.assertEqual(r.returncode, 0, r.stderr)
        t1 = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello there"}]
        a1 = answer(t1)
        t2 = t1 + [{"role": "assistant", "content": a1}, {"role": "user", "content": "Tell me more"}]
        self.assertEqual(r.stdout.decode(), a1 + "\n" + answer(t2) + "\n")
        sent = self.submits()
        self.assertEqual([s["messages"] for s in sent], [t1, t2], "the blank line is skipped")
        self.assertEqual(len({s["id"] for s in sent}), 2)
        self.assertEqual(sent[0]["params"]["seed"], 3)
        self.assertEqual(r.stderr.decode(), "", "no banner or prompt without a terminal")

    def test_chat_drops_a_rejected_turn_and_goes_on(self):
        r = self.run_cortex("chat", stdin="reject\nhi\n")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("error 400 invalid_param: the fake rejects", r.stderr.decode())
        self.assertEqual([s["messages"] for s in self.submits()],
                         [[{"role": "user", "content": "reject"}], [{"role": "user", "content": "hi"}]])
        self.assertEqual(r.stdout.decode(), answer([{"role": "user", "content": "hi"}]) + "\n")

    def test_chat_usage_errors(self):
        r = self.run_cortex("chat", "--chat-template-kwargs", "3", stdin="hi\n")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--chat-template-kwargs must be a JSON object", r.stderr.decode())
        r = self.run_cortex("chat", "--help")
        self.assertEqual(r.returncode, 0)
        for flag in ("--system", "--temperature", "--max-tokens", "--chat-template-kwargs", "Ctrl-C"):
            self.assertIn(flag, r.stdout.decode())

    def test_ctrl_c_cancels_the_answer_then_quits_at_the_prompt(self):
        p = subprocess.Popen([CORTEX, "chat", "--endpoint", self.server.endpoint, "--timeout-ms", "5000"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            # The fake streams "." until cancelled for a last turn "forever".
            p.stdin.write(b"forever\n")
            p.stdin.flush()
            support.wait_until(lambda: any(m.get("t") == "submit" for m in self.server.received), 10,
                               what="the submit")
            time.sleep(0.3)  # some chunks stream
            p.send_signal(signal.SIGINT)
            support.wait_until(lambda: any(m.get("t") == "cancel" for m in self.server.received), 10,
                               what="the cancel")
            p.stdin.write(b"abc\n")
            p.stdin.flush()
            support.wait_until(lambda: len([m for m in self.server.received if m.get("t") == "submit"]) == 2, 10,
                               what="the next turn")
            time.sleep(0.5)  # its answer streams; then Ctrl-C at the prompt quits
            p.send_signal(signal.SIGINT)
            out, err = p.communicate(timeout=10)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        self.assertEqual(p.returncode, 0, err)
        cancel = [m for m in self.server.received if m.get("t") == "cancel"]
        first, second = self.submits()
        self.assertEqual(cancel, [{"v": 1, "t": "cancel", "id": first["id"]}])
        self.assertIn("[cancelled]", err.decode())
        partial = second["messages"][1]
        self.assertEqual((partial["role"], set(partial["content"])), ("assistant", {"."}),
                         "the cancelled answer's text so far stays in the conversation")
        self.assertEqual(second["messages"][2], {"role": "user", "content": "abc"})
        lines = out.decode().split("\n")
        self.assertEqual(lines[0], partial["content"])
        self.assertEqual(lines[1], answer(second["messages"]))


if __name__ == "__main__":
    unittest.main()
