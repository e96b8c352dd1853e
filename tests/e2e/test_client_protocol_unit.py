"""Unit tests of cortexstream.protocol.ClientProtocol, the sans-I/O core
that Client and AsyncClient share: bytes in, bytes and events out, no
socket. Messages are built with msgpack here and fed as received frames."""

import ast
import unittest

import msgpack

from tests.e2e import support  # noqa: F401  (puts clients/python on sys.path)
from cortexstream import CortexError, ProtocolViolation, protocol
from cortexstream.protocol import ClientProtocol, RequestEvent, RequestState, Unrouted


def frames(**m):
    """One received multipart as a DEALER sees it: the payload frame."""
    return [msgpack.packb(dict(v=1, **m), use_bin_type=True)]


def unpack(data):
    return msgpack.unpackb(data, raw=False, strict_map_key=False)


class ClientProtocolTest(unittest.TestCase):
    def setUp(self):
        self.p = ClientProtocol(id_prefix="t-")

    def feed(self, **m):
        return self.p.receive(frames(**m))

    def drain(self, state):
        """Every event of state available now."""
        out = []
        while True:
            m = self.p.next_event(state)
            if m is None:
                return out
            out.append(m)

    def finish(self, id, text="", **kw):
        return self.feed(t="finished", id=id, reason="length", text=text, **kw)

    # -- outgoing --------------------------------------------------------------

    def test_submit_encodes_the_message(self):
        id, data = self.p.submit(prompt="hi", stream=False, priority=2, deadline_ms=50, want_token_ids=True,
                                 logprobs=3, tags={"k": "v"}, add_bos=0, extra={"model": "m"}, max_tokens=4,
                                 temperature=0, top_k=None, logit_bias={"5": 1}, ignore_eos=True)
        m = unpack(data)
        self.assertEqual(m, {"v": 1, "t": "submit", "id": id, "prompt": "hi", "stream": False, "priority": 2,
                             "deadline_ms": 50, "want": {"token_ids": True, "logprobs": 3}, "tags": {"k": "v"},
                             "add_bos": False, "model": "m",
                             "params": {"max_tokens": 4, "temperature": 0.0, "logit_bias": {5: 1.0},
                                        "ignore_eos": True}})
        self.assertIsInstance(m["params"]["temperature"], float)
        self.assertIsInstance(m["params"]["ignore_eos"], bool)
        # Defaults add nothing; tokens and chat turns go as lists.
        _, data = self.p.submit(tokens=(1, 2), id="x")
        self.assertEqual(unpack(data), {"v": 1, "t": "submit", "id": "x", "tokens": [1, 2]})
        turns = [{"role": "user", "content": "a"}]
        _, data = self.p.submit(messages=turns, chat_template_kwargs={"t": 1}, add_generation_prompt=False, id="c")
        self.assertEqual(unpack(data), {"v": 1, "t": "submit", "id": "c", "messages": turns,
                                        "chat_template_kwargs": {"t": 1}, "add_generation_prompt": False})

    def test_auth_goes_on_every_submit_and_nothing_else(self):
        self.p.auth = "cs-key"
        self.assertEqual(unpack(self.p.submit(prompt="a")[1])["auth"], "cs-key")
        self.assertNotIn("auth", unpack(self.p.ping().data))
        self.assertNotIn("auth", unpack(self.p.cancel("a")))
        self.p.auth = None
        self.assertNotIn("auth", unpack(self.p.submit(prompt="b")[1]))

    def test_fresh_ids_are_unique_and_active_ids_refused(self):
        ids = [self.p.submit(prompt="p")[0] for _ in range(3)]
        self.assertEqual(ids, ["t-1", "t-2", "t-3"])
        self.assertEqual(self.p.in_flight(), ids)
        self.assertEqual(self.p.submit(prompt="p", id="mine")[0], "mine")
        with self.assertRaises(ValueError):
            self.p.submit(prompt="p", id="mine")
        self.assertEqual(ClientProtocol().submit(prompt="p")[0][:2], "py")  # the default prefix

    def test_id_is_free_again_once_its_terminal_event_is_read_or_the_send_abandoned(self):
        self.p.submit(prompt="p", id="a")
        s = RequestState("a")
        self.finish("a")
        with self.assertRaises(ValueError):  # ended, but its stream has not read the end yet
            self.p.submit(prompt="p", id="a")
        self.assertEqual([m["t"] for m in self.drain(s)], ["finished"])
        self.p.submit(prompt="again", id="a")
        self.feed(t="accepted", id="a")
        self.assertIsNone(self.p.next_event(s))  # the ended stream takes nothing of the new request
        self.assertEqual(self.p.next_event(RequestState("a"))["t"], "accepted")
        self.p.abandon("a")
        self.assertEqual(self.p.in_flight(), [])
        self.p.submit(prompt="again", id="a")

    def test_a_submit_that_cannot_be_encoded_tracks_nothing(self):
        with self.assertRaises(TypeError):
            self.p.submit(prompt="p", id="bad", stop=object())
        self.assertEqual(self.p.in_flight(), [])

    def test_cancel_and_connection_calls(self):
        self.assertEqual(unpack(self.p.cancel("a")), {"v": 1, "t": "cancel", "id": "a"})
        self.assertEqual(unpack(self.p.cancel(iter(["a", "b"]))), {"v": 1, "t": "cancel", "ids": ["a", "b"]})
        ping = self.p.ping(nonce=7)
        self.assertEqual((unpack(ping.data), ping.reply_type), ({"v": 1, "t": "ping", "nonce": 7}, "pong"))
        self.assertEqual(unpack(self.p.ping().data), {"v": 1, "t": "ping"})
        for call, t in ((self.p.stats(), "stats"), (self.p.health(), "health"), (self.p.models(), "models")):
            self.assertEqual((unpack(call.data), call.reply_type), ({"v": 1, "t": t}, t))
        reply = {"v": 1, "t": "models", "models": [{"name": "m"}]}
        self.assertEqual(self.p.models().result(reply), [{"name": "m"}])
        self.assertEqual(self.p.stats().result({"t": "stats", "running": 0}), {"t": "stats", "running": 0})

    def test_cancel_of_an_unknown_id_is_sent_and_changes_nothing(self):
        self.p.submit(prompt="p", id="live")
        self.assertEqual(unpack(self.p.cancel(["nope", "live"])), {"v": 1, "t": "cancel", "ids": ["nope", "live"]})
        self.assertEqual(unpack(self.p.cancel("nope")), {"v": 1, "t": "cancel", "id": "nope"})
        self.assertEqual(self.p.in_flight(), ["live"])
        self.assertEqual(self.p.pending(), [])
        self.assertIsInstance(self.feed(t="chunk", id="live", text="x"), RequestEvent)

    def test_raw_encode(self):
        self.assertEqual(self.p.encode(b"\xc1"), b"\xc1")
        self.assertEqual(unpack(self.p.encode({"t": "bogus"})), {"t": "bogus"})  # nothing added, not even v

    # -- incoming --------------------------------------------------------------

    def test_frames_that_are_not_a_msgpack_map_are_violations_and_file_nothing(self):
        for bad in ([b"\xc1"], [msgpack.packb([1, 2])], []):
            with self.assertRaises(ProtocolViolation, msg=repr(bad)):
                self.p.receive(bad)
        self.assertEqual(self.p.pending(), [])
        # A mirrored empty delimiter before the payload is skipped.
        self.assertEqual(self.p.receive([b""] + frames(t="pong")), Unrouted({"v": 1, "t": "pong"}))

    def test_interleaved_streams_are_filed_by_id(self):
        a, b = self.p.submit(prompt="a", id="a")[0], self.p.submit(prompt="b", id="b")[0]
        sa, sb = RequestState(a), RequestState(b)
        for i, (id, t, text) in enumerate([("a", "accepted", None), ("b", "accepted", None), ("a", "chunk", "A1"),
                                           ("b", "chunk", "B1"), ("b", "chunk", "B2"), ("a", "chunk", "A2")]):
            m = dict(t=t, id=id, seq=i) if text is None else dict(t=t, id=id, text=text, seq=i)
            self.assertEqual(self.feed(**m), RequestEvent(id, dict(v=1, **m), False))
        self.assertEqual(self.feed(t="finished", id="b", reason="stop", text="B3"),
                         RequestEvent("b", {"v": 1, "t": "finished", "id": "b", "reason": "stop", "text": "B3"},
                                      True))
        # b read first: a's messages wait, each in order.
        self.assertEqual([m["t"] for m in self.drain(sb)], ["accepted", "chunk", "chunk", "finished"])
        self.assertEqual(self.p.result(sb), ("B1B2B3", sb.finished))
        self.assertEqual([m.get("text") for m in self.drain(sa)], [None, "A1", "A2"])
        self.assertFalse(sa.done)
        self.finish("a", text="!")
        self.assertEqual([m["t"] for m in self.drain(sa)], ["finished"])
        self.assertEqual(self.p.result(sa)[0], "A1A2!")
        self.assertTrue(all(m["id"] == "a" for m in sa.events))
        self.assertEqual((self.p.in_flight(), self.p.pending()), ([], []))

    def test_exactly_one_terminal_event_per_request(self):
        self.p.submit(prompt="p", id="a")
        s = RequestState("a")
        self.feed(t="accepted", id="a")
        self.assertEqual(self.finish("a", text="end").terminal, True)
        late = [self.feed(t="chunk", id="a", text="late"), self.finish("a", text="again"),
                self.feed(t="error", id="a", code=500, name="internal", message="m")]
        self.assertEqual([type(e) for e in late], [Unrouted] * 3)  # filed before the first was read
        self.assertEqual([m["t"] for m in self.drain(s)], ["accepted", "finished"])
        self.assertTrue(s.done)
        self.assertEqual(s.finished["text"], "end")
        self.assertIsInstance(self.finish("a"), Unrouted)  # and after
        self.assertIsNone(self.p.next_event(s))
        self.assertEqual([m.get("text") for m in self.p.pending()], ["late", "again", None, ""])

    def test_an_error_is_a_terminal_event(self):
        self.p.submit(prompt="p", id="r")
        s = RequestState("r")
        ev = self.feed(t="error", id="r", seq=0, terminal=True, code=400, name="invalid_param", message="no")
        self.assertTrue(ev.terminal)
        self.assertEqual([m["t"] for m in self.drain(s)], ["error"])
        self.assertEqual((s.done, s.error["code"], s.finished), (True, 400, None))
        self.assertIsInstance(self.finish("r"), Unrouted)

    def test_messages_of_unknown_ids_are_kept_unrouted_in_order(self):
        got = [self.feed(t="chunk", id="ghost", text="x"), self.feed(t="pong", nonce=1),
               self.feed(t="error", code=400, name="malformed", message="m"), self.feed(t="chunk", id=5)]
        self.assertEqual([type(e) for e in got], [Unrouted] * 4)
        self.assertEqual(self.p.pending(), [e.message for e in got])
        self.assertEqual(self.p.next_unrouted(), got[0].message)
        self.assertEqual(self.p.pending(clear=True), [e.message for e in got[1:]])
        self.assertIsNone(self.p.next_unrouted())

    def test_errors_that_only_reject_another_message_leave_the_request_alone(self):
        self.p.submit(prompt="p", id="d")
        s = RequestState("d")
        self.assertIsInstance(self.feed(t="error", id="d", terminal=False, code=400, name="malformed",
                                        message="bad cancel"), Unrouted)
        self.assertIsInstance(self.feed(t="accepted", id="d"), RequestEvent)
        # A 409 for an accepted id (servers before the terminal flag) rejects a duplicate submit.
        self.assertIsInstance(self.feed(t="error", id="d", code=409, name="duplicate_id", message="m"), Unrouted)
        self.assertEqual([m["t"] for m in self.drain(s)], ["accepted"])
        self.assertFalse(s.done)
        self.assertEqual([m["code"] for m in self.p.pending()], [400, 409])
        # Before its accepted, a 409 is the submit's own rejection.
        self.p.submit(prompt="p", id="e")
        self.assertEqual(self.feed(t="error", id="e", code=409, name="duplicate_id", message="m").terminal, True)

    def test_track_files_messages_already_kept(self):
        self.feed(t="accepted", id="raw", ignored=["x"])
        self.feed(t="pong")
        self.feed(t="chunk", id="raw", text="ab")
        self.feed(t="chunk", id="other", text="zz")
        self.p.track("raw")
        self.assertEqual([m["t"] for m in self.p.pending()], ["pong", "chunk"])
        s = RequestState("raw")
        self.finish("raw", text="c")
        self.drain(s)
        self.assertEqual((s.accepted["ignored"], self.p.result(s)[0]), (["x"], "abc"))

    # -- results and errors ----------------------------------------------------

    def test_result_raises_the_error_a_request_ended_with(self):
        self.p.submit(prompt="p", id="x")
        s = RequestState("x")
        with self.assertRaises(RuntimeError):  # not ended
            self.p.result(s)
        self.feed(t="accepted", id="x")
        self.feed(t="error", id="x", terminal=True, code=429, name="overloaded", message="later", retryable=True,
                  retry_after_ms=250)
        self.drain(s)
        with self.assertRaises(CortexError) as cm:
            self.p.result(s)
        e = cm.exception
        self.assertEqual((e.code, e.name, e.message, e.retryable, e.retry_after_ms, e.id),
                         (429, "overloaded", "later", True, 250, "x"))
        self.assertIs(e.reply, s.error)

    def test_take_reply_picks_its_type_and_raises_an_idless_error(self):
        ping, stats = self.p.ping(), self.p.stats()
        self.assertIsNone(self.p.take_reply(ping))
        self.feed(t="chunk", id="ghost", text="x")
        self.feed(t="error", id="ghost", code=400, name="unknown_type", message="m")
        self.feed(t="stats", running=1)
        self.feed(t="pong", nonce=1)
        self.assertEqual(self.p.take_reply(ping)["nonce"], 1)
        self.assertEqual(self.p.take_reply(stats)["running"], 1)
        self.assertEqual([m["t"] for m in self.p.pending()], ["chunk", "error"])  # errors with an id stay
        self.feed(t="error", code=503, name="draining", message="bye", retryable=True)
        self.feed(t="pong", nonce=2)
        with self.assertRaises(CortexError) as cm:
            self.p.take_reply(ping)
        self.assertEqual((cm.exception.code, cm.exception.name, cm.exception.id), (503, "draining", None))
        self.assertEqual(self.p.take_reply(ping)["nonce"], 2)
        self.assertEqual(len(self.p.pending()), 2)

    def test_the_module_does_no_io(self):
        with open(protocol.__file__) as f:
            tree = ast.parse(f.read())
        imported = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                imported.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                imported.add(node.module.split(".")[0])
        self.assertEqual(imported & {"zmq", "socket", "asyncio", "threading", "time", "select", "selectors"},
                         set())


if __name__ == "__main__":
    unittest.main()
