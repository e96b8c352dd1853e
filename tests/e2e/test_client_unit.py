"""Unit tests of clients/python/cortexstream.py against a fake ROUTER
(fake_server.py). They check the client's own logic: framing, routing of
interleaved streams by id, errors, raw access. The e2e tests use the real
cortexd."""

import unittest

import msgpack

from tests.e2e import support  # noqa: F401  (puts clients/python on sys.path)
import cortexstream
from tests.e2e.fake_server import FakeServer, fake_text


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

    def test_timeout(self):
        c = cortexstream.Client("tcp://127.0.0.1:1", timeout_s=0.2)
        try:
            with self.assertRaises(cortexstream.CortexTimeout):
                c.ping()
        finally:
            c.close()


if __name__ == "__main__":
    unittest.main()
