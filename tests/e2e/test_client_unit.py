"""Unit tests of the Python client (clients/python/cortexstream/) against a
fake ROUTER (fake_server.py). They check the client's own logic: framing,
routing of interleaved streams by id, errors, raw access, chat messages, the
command line. The e2e tests use the real cortexd."""

import json
import os
import subprocess
import tempfile
import unittest

import msgpack
import zmq

from tests.e2e import support  # noqa: F401  (puts clients/python on sys.path)
import cortexstream
from tests.e2e.fake_server import FakeServer, fake_chat_prompt, fake_text

CHAT = [{"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "Hi "}, {"type": "text", "text": "there"}]},
        {"role": "assistant", "content": None,
         "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"b": 1, "a": [2.5, None]}}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"}]


class ClientUnitTest(unittest.TestCase):
    def setUp(self):
        self.server = FakeServer()
        self.client = cortexstream.Client(self.server.endpoint, timeout_s=5)

    def tearDown(self):
        self.client.close()
        self.server.close()

    def test_submit_streams_accepted_chunks_finished(self):
        events = list(self.client.submit(prompt="hello", id="a", max_tokens=5, temperature=0))
        self.assertEqual([e["t"] for e in events][0], "accepted")
        self.assertEqual(events[-1]["t"], "finished")
        self.assertEqual([e["seq"] for e in events], list(range(len(events))))
        self.assertEqual("".join(e.get("text", "") for e in events[1:]), fake_text("hello"))
        sent = self.server.received[-1]
        self.assertEqual(sent["v"], 1)
        self.assertEqual(sent["t"], "submit")
        self.assertEqual(sent["params"], {"max_tokens": 5, "temperature": 0.0})
        self.assertIsInstance(sent["params"]["temperature"], float)
        self.assertNotIn("stream", sent)

    def test_complete_non_streamed(self):
        text, fin = self.client.complete(prompt="abc", stream=False, tags={"k": "v"}, logprobs=2,
                                         want_token_ids=True, priority=3, deadline_ms=100)
        self.assertEqual(text, fake_text("abc"))
        self.assertEqual(fin["reason"], "length")
        sent = self.server.received[-1]
        self.assertIs(sent["stream"], False)
        self.assertEqual(sent["tags"], {"k": "v"})
        self.assertEqual(sent["want"], {"token_ids": True, "logprobs": 2})
        self.assertEqual((sent["priority"], sent["deadline_ms"]), (3, 100))

    def test_interleaved_streams_are_routed_by_id(self):
        a = self.client.submit(prompt="first prompt", id="a")
        b = self.client.submit(prompt="second prompt", id="b")
        # Read b to its end first: a's messages arrive interleaved and must be buffered.
        self.assertEqual(b.result()[0], fake_text("second prompt"))
        self.assertEqual(a.result()[0], fake_text("first prompt"))
        for s in (a, b):
            self.assertTrue(all(e["id"] == s.id for e in s.events))
            self.assertEqual([e["seq"] for e in s.events], list(range(len(s.events))))
        self.assertEqual(self.client.pending(), [])

    def test_connection_calls_between_streams(self):
        s = self.client.submit(prompt="xyz", id="s")
        self.assertEqual(self.client.ping(nonce=42)["nonce"], 42)
        self.assertEqual(self.client.health()["status"], "ready")
        self.assertEqual(self.client.models()[0]["name"], "fake")
        self.assertIn("kv_blocks_used", self.client.stats())
        self.assertEqual(s.result()[0], fake_text("xyz"))

    def test_error_is_raised_by_complete_and_yielded_by_stream(self):
        with self.assertRaises(cortexstream.CortexError) as cm:
            self.client.complete(tokens=[1, 2])  # the fake wants a prompt
        self.assertEqual((cm.exception.code, cm.exception.name), (400, "invalid_param"))
        self.assertEqual(cm.exception.id, cm.exception.reply["id"])
        events = list(self.client.submit(tokens=[1], id="e"))
        self.assertEqual([e["t"] for e in events], ["error"])

    def test_cancel_one_and_many(self):
        s1 = self.client.submit(prompt="forever", id="f1")
        s2 = self.client.submit(prompt="forever", id="f2")
        self.assertEqual(next(s1)["t"], "accepted")
        self.assertEqual(next(s2)["t"], "accepted")
        s1.cancel()
        self.assertEqual(list(s1)[-1]["reason"], "cancelled")
        self.client.cancel(["f2", "nope"])
        self.assertEqual(s2.finished["reason"] if s2.done else list(s2)[-1]["reason"], "cancelled")
        self.assertEqual(self.server.received[-1], {"v": 1, "t": "cancel", "ids": ["f2", "nope"]})

    def test_raw_send_recv_and_track(self):
        self.client.send(b"\xc1")  # never valid msgpack
        m = self.client.recv()
        self.assertEqual((m["t"], m["code"], m["name"]), ("error", 400, "malformed"))
        self.client.send(msgpack.packb([1, 2]))
        self.assertEqual(self.client.recv()["name"], "malformed")
        self.client.send({"v": 1, "t": "submit", "id": "raw", "prompt": "q", "bogus": 1})
        first = self.client.recv()
        self.assertEqual((first["t"], first["ignored"]), ("accepted", ["bogus"]))
        s = self.client.track("raw")
        self.assertEqual("".join(e.get("text", "") for e in s), fake_text("q"))

    def test_duplicate_id_is_refused_locally_and_raw_duplicate_gets_409(self):
        s = self.client.submit(prompt="forever", id="d")
        with self.assertRaises(ValueError):
            self.client.submit(prompt="x", id="d")
        self.assertEqual(next(s)["t"], "accepted")
        self.client.send({"v": 1, "t": "submit", "id": "d", "prompt": "x"})
        err = self.client.recv()  # the stream of "d" skips the 409 meant for the duplicate
        self.assertEqual((err["t"], err["code"], err["id"]), ("error", 409, "d"))
        self.assertFalse(s.done)
        s.cancel()
        self.assertEqual(list(s)[-1]["reason"], "cancelled")

    def test_submit_messages_sends_them_as_given(self):
        text, fin = self.client.complete(messages=CHAT, chat_template_kwargs={"enable_thinking": False},
                                         add_generation_prompt=False, max_tokens=4)
        self.assertEqual(text, fake_text("system:Be brief.|user:Hi there|assistant:|tool:ok"))
        sent = self.server.received[-1]
        self.assertEqual(sent["messages"], CHAT)
        self.assertEqual(list(sent["messages"][2]["tool_calls"][0]["function"]["arguments"]), ["b", "a"])
        self.assertEqual(sent["chat_template_kwargs"], {"enable_thinking": False})
        self.assertIs(sent["add_generation_prompt"], False)
        self.assertNotIn("prompt", sent)
        self.assertNotIn("tokens", sent)
        # Without the chat extras only `messages` goes out.
        self.client.complete(messages=CHAT[:1])
        sent = self.server.received[-1]
        self.assertEqual(sorted(sent), ["id", "messages", "t", "v"])

    def test_pending_clear(self):
        self.client.send({"v": 1, "t": "bogus", "id": "x"})
        self.assertEqual(self.client.recv()["name"], "unknown_type")
        self.client.send({"v": 1, "t": "bogus", "id": "x"})
        self.assertEqual(self.client.ping()["t"], "pong")  # the error (for id x) arrives first and is kept
        self.assertEqual([m["name"] for m in self.client.pending(clear=True)], ["unknown_type"])
        self.assertEqual(self.client.pending(), [])

    def test_command_line_prompt_and_messages_json(self):
        script = os.path.join(support.REPO_DIR, "clients", "python", "cortexstream.py")
        run = lambda *args, stdin=None: subprocess.run(  # noqa: E731
            ["/usr/bin/python3", script, "--endpoint", self.server.endpoint, "--timeout", "5"] + list(args),
            input=stdin, capture_output=True, text=True, timeout=60)
        r = run("abc")
        self.assertEqual((r.returncode, r.stdout), (0, fake_text("abc") + "\n"), r.stderr)
        r = run("--messages-json", "-", "--chat-template-kwargs", '{"k": [1]}', stdin=json.dumps(CHAT[:2]))
        self.assertEqual((r.returncode, r.stdout), (0, fake_text(fake_chat_prompt(CHAT[:2])) + "\n"), r.stderr)
        self.assertEqual((self.server.received[-1]["messages"], self.server.received[-1]["chat_template_kwargs"]),
                         (CHAT[:2], {"k": [1]}))
        r = run("abc", "--chat-template-kwargs", "{}")
        self.assertEqual(r.returncode, 2)
        self.assertIn("goes with --messages-json", r.stderr)
        r = run("--messages-json", "-", stdin='{"role": "user"}')
        self.assertEqual(r.returncode, 2)
        self.assertIn("JSON array", r.stderr)
        r = run()
        self.assertEqual(r.returncode, 2)
        self.assertIn("give a prompt or --messages-json", r.stderr)

    def test_timeout(self):
        c = cortexstream.Client("tcp://127.0.0.1:1", timeout_s=0.2)
        try:
            with self.assertRaises(cortexstream.CortexTimeout):
                c.ping()
        finally:
            c.close()


class ClientCredentialsUnitTest(unittest.TestCase):
    """CURVE keys and the submit's ``auth`` (auth.md), against a fake that is
    a CURVE server and records the public key each client presents."""

    def setUp(self):
        self.server_pub, server_secret = zmq.curve_keypair()
        self.pub, self.secret = zmq.curve_keypair()
        self.server = FakeServer(curve_secret_key=server_secret)
        self.clients = []

    def tearDown(self):
        for c in self.clients:
            c.close()
        self.server.close()

    def client(self, **kw):
        c = cortexstream.Client(self.server.endpoint, timeout_s=kw.pop("timeout_s", 5), **kw)
        self.clients.append(c)
        return c

    def test_curve_client_with_keys_as_str_or_bytes_and_auth_on_every_submit(self):
        c = self.client(server_key=self.server_pub.decode(), public_key=self.pub, secret_key=self.secret.decode(),
                        auth="cs-secret")
        self.assertEqual(c.complete(prompt="hi")[0], fake_text("hi"))
        self.assertEqual(c.ping()["t"], "pong")
        self.assertEqual(c.complete(messages=CHAT[:1])[0], fake_text(fake_chat_prompt(CHAT[:1])))
        self.assertEqual(self.server.curve_clients, [self.pub.decode()])
        submits = [m for m in self.server.received if m["t"] == "submit"]
        self.assertEqual([m.get("auth") for m in submits], ["cs-secret", "cs-secret"])
        self.assertNotIn("auth", [m for m in self.server.received if m["t"] == "ping"][0])

    def test_public_key_is_derived_from_the_secret(self):
        c = self.client(server_key=self.server_pub, secret_key=self.secret)
        self.assertEqual(c.complete(prompt="x")[0], fake_text("x"))
        self.assertEqual(self.server.curve_clients, [self.pub.decode()])
        self.assertNotIn("auth", self.server.received[-1])

    def test_plaintext_client_gets_nothing_from_a_curve_server(self):
        c = self.client(timeout_s=1)
        with self.assertRaises(cortexstream.CortexTimeout):
            c.ping()
        self.assertEqual(self.server.received, [])

    def test_bad_key_arguments_are_value_errors(self):
        other_pub, _ = zmq.curve_keypair()
        cases = [dict(server_key=self.server_pub),                                # no client key
                 dict(secret_key=self.secret),                                    # no server key
                 dict(server_key="short", secret_key=self.secret),                # not 40 characters
                 dict(server_key=self.server_pub, secret_key='"' * 40),           # not Z85
                 dict(server_key=self.server_pub, public_key=other_pub, secret_key=self.secret)]  # not a pair
        for kw in cases:
            with self.assertRaises(ValueError, msg=str(kw)) as cm:
                cortexstream.Client(self.server.endpoint, **kw)
            self.assertNotIn(self.secret.decode(), str(cm.exception))

    def test_read_curve_key_files(self):
        with tempfile.TemporaryDirectory() as d:
            good, crlf, bad = (os.path.join(d, n) for n in ("a.pub", "b.pub", "c.pub"))
            with open(good, "wb") as f:
                f.write(self.pub + b"\n")
            with open(crlf, "wb") as f:
                f.write(self.pub + b"\r\n")
            with open(bad, "wb") as f:
                f.write(b"not a key\n")
            self.assertEqual(cortexstream.read_curve_key(good), self.pub.decode())
            self.assertEqual(cortexstream.read_curve_key(crlf), self.pub.decode())
            with self.assertRaises(ValueError):
                cortexstream.read_curve_key(bad)

    def test_command_line_curve_and_api_key(self):
        with tempfile.TemporaryDirectory() as d:
            for name, data in (("server.pub", self.server_pub), ("me.pub", self.pub), ("me.key", self.secret)):
                with open(os.path.join(d, name), "wb") as f:
                    f.write(data + b"\n")
            script = os.path.join(support.REPO_DIR, "clients", "python", "cortexstream.py")
            base = ["/usr/bin/python3", script, "--endpoint", self.server.endpoint, "--timeout", "5"]
            env = dict(os.environ, CORTEX_API_KEY="cs-from-env")
            r = subprocess.run(base + ["--curve-server-key", os.path.join(d, "server.pub"),
                                       "--curve-key", os.path.join(d, "me"), "abc"],
                               capture_output=True, text=True, timeout=60, env=env)
            self.assertEqual((r.returncode, r.stdout), (0, fake_text("abc") + "\n"), r.stderr)
            self.assertEqual(self.server.received[-1]["auth"], "cs-from-env")
            self.assertEqual(self.server.curve_clients, [self.pub.decode()])
            r = subprocess.run(base + ["--curve-key", os.path.join(d, "me"), "abc"],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 2)
            self.assertIn("--curve-server-key", r.stderr)


if __name__ == "__main__":
    unittest.main()
