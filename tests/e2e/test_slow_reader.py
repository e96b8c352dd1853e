"""A client that stops reading: generation goes on at full speed, its tokens
are merged into fewer, larger chunks (contiguous seq, nothing lost), and the
text equals what a normal reader gets."""

import time
import unittest

import msgpack
import zmq

from tests.e2e import support

N_TOKENS = 1500


class SlowReaderTest(support.ServerTestCase):
    # Tiny socket buffers so the backlog reaches the gateway quickly. A client
    # whose buffers stay full cannot answer heartbeats either; the long
    # timeout keeps a slow machine from turning this reader into a gone one.
    SERVER_ARGS = ("--sndhwm", "2", "--sndbuf-bytes", "4096", "--heartbeat-timeout-ms", "600000")

    def test_tokens_are_merged_never_lost_and_generation_never_waits(self):
        request = {"v": 1, "t": "submit", "id": "slow", "prompt": "Once upon a time",
                   "params": {"temperature": 0.0, "max_tokens": N_TOKENS, "ignore_eos": True}}
        reference, fin = self.client().complete(prompt="Once upon a time", max_tokens=N_TOKENS,
                                                temperature=0, ignore_eos=True)
        self.assertEqual(fin["usage"]["completion_tokens"], N_TOKENS)

        ctx = zmq.Context.instance()
        sock = ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.RCVHWM, 2)
        sock.setsockopt(zmq.RCVBUF, 4096)
        sock.setsockopt(zmq.LINGER, 0)
        sock.connect(self.server.endpoint)
        try:
            sock.send(msgpack.packb(request))
            # Do not read. The engine must finish the request anyway: poll
            # stats on another connection until nothing runs.
            monitor = self.client()
            deadline = time.monotonic() + 60 * support.sanitizer_slowdown()
            while time.monotonic() < deadline:
                st = monitor.stats()
                if st["running"] == 0 and st["waiting"] == 0 and st["tokens_generated"] >= 2 * N_TOKENS:
                    break
                time.sleep(0.02)
            else:
                self.fail("generation stalled behind a reader that does not read: %s" % st)
            self.assertEqual(st["requests_finished"]["client_gone"], 0, st)

            # Now read everything.
            msgs = []
            poller = zmq.Poller()
            poller.register(sock, zmq.POLLIN)
            while not msgs or msgs[-1]["t"] not in ("finished", "error"):
                if not poller.poll(30000):
                    self.fail("no terminal message; got %d messages" % len(msgs))
                msgs.append(msgpack.unpackb(sock.recv(), raw=False))
        finally:
            sock.close()

        self.assertEqual(msgs[0]["t"], "accepted")
        self.assertEqual([m["seq"] for m in msgs], list(range(len(msgs))), "seq must be contiguous from 0")
        self.assertEqual(msgs[-1]["t"], "finished")
        self.assertEqual(msgs[-1]["reason"], "length")
        self.assertEqual(msgs[-1]["usage"]["completion_tokens"], N_TOKENS)
        chunks = [m for m in msgs if m["t"] == "chunk"]
        self.assertLess(len(chunks), N_TOKENS, "a blocked reader must get merged chunks")
        text = "".join(m["text"] for m in chunks) + msgs[-1].get("text", "")
        self.assertEqual(text, reference)


if __name__ == "__main__":
    unittest.main()
