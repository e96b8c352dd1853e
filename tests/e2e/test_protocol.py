"""Every input rule of protocol.md against a real cortexd: each malformed or
out-of-range message gets its specified error code and name, a rejected
submit gets only the error, and the next valid request on the same
connection still succeeds."""

import math
import unittest

import msgpack

from tests.e2e import support

PROMPT = "Once upon a time"
DROP = object()  # marks a key to remove from the base submit
INVALID = (400, ("invalid_param", "malformed"))  # wrong type or out-of-range value
TOO_LARGE = (413, ("too_large",))


def submit(id="bad", params=None, **fields):
    """A valid submit of PROMPT (4 greedy tokens) with fields / params changed."""
    m = {"v": 1, "t": "submit", "prompt": PROMPT, "params": {"max_tokens": 4, "temperature": 0.0}}
    fields["id"] = id
    for k, v in fields.items():
        if v is DROP:
            m.pop(k, None)
        else:
            m[k] = v
    for k, v in (params or {}).items():
        m["params"][k] = v
    return m


class ProtocolRulesTest(support.ServerTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        c = cls.server.client()
        cls.n_ctx = c.models()[0]["n_ctx"]
        cls.n_vocab = c.models()[0]["n_vocab"]
        cls.reference, _ = c.complete(prompt=PROMPT, max_tokens=4, temperature=0)

    def setUp(self):
        self.c = self.client(timeout_s=10)

    def expect_error(self, msg, code, names, id=None):
        """Sends msg raw; the reply must be one error (code, name in names) and
        the next valid request on the same connection must succeed."""
        data = msg if isinstance(msg, bytes) else msgpack.packb(msg, use_bin_type=True)
        try:
            return self._expect_error(data, code, names, id)
        except BaseException:
            self.c = self.client(timeout_s=10)  # a failed case must not disturb the next one
            raise

    def _expect_error(self, data, code, names, id):
        self.c.send(data)
        m = self.c.recv()
        self.assertEqual(m.get("t"), "error", "expected an error, got %r" % (m,))
        self.assertEqual(m.get("code"), code, m)
        self.assertIn(m.get("name"), names, m)
        self.assertIsInstance(m.get("message"), str, m)
        self.assertTrue(m["message"], "the message says what to fix")
        self.assertIs(m.get("retryable"), False, m)
        if id is not None:
            self.assertEqual(m.get("id"), id, "the error names the request")
        # protocol.md: a rejected submit's error is its terminal message (seq 0); any other
        # rejected message's error is not terminal and has no seq. A message of another
        # version is not processed at all, so it is no v1 submit.
        try:
            sent = msgpack.unpackb(data, raw=False, strict_map_key=False)
        except Exception:
            sent = None
        is_submit = isinstance(sent, dict) and sent.get("t") == "submit" and sent.get("v") == 1
        self.assertIs(m.get("terminal"), is_submit, m)
        if is_submit and "id" in m:
            self.assertEqual(m.get("seq"), 0, m)
        elif not is_submit:
            self.assertNotIn("seq", m)
        self.expect_next_request_ok(rejected_id=id)
        return m

    def expect_next_request_ok(self, rejected_id=None):
        text, fin = self.c.complete(prompt=PROMPT, max_tokens=4, temperature=0)
        self.assertEqual(text, self.reference)
        stray = self.c.pending()
        self.assertEqual(stray, [], "nothing may follow a rejection (e.g. an accepted for %r)" % (rejected_id,))

    def run_cases(self, cases):
        for i, (label, msg, (code, names)) in enumerate(cases):
            with self.subTest(label):
                id = msg.get("id") if isinstance(msg, dict) and isinstance(msg.get("id"), str) and \
                    0 < len(msg["id"].encode()) <= 64 else None
                self.expect_error(msg, code, names, id=id)

    def test_not_msgpack_and_not_a_map(self):
        for label, data in [("reserved byte 0xc1", b"\xc1"),
                            ("truncated array", b"\x93\x01"),
                            ("truncated str", b"\xa5ab"),
                            ("empty frame", b""),
                            ("array", msgpack.packb([1, "submit"])),
                            ("string", msgpack.packb("submit")),
                            ("integer", msgpack.packb(42)),
                            ("nil", msgpack.packb(None))]:
            with self.subTest(label):
                self.expect_error(data, 400, ("malformed",))

    def test_malformed_messages_are_counted_in_stats(self):
        before = self.c.stats()["malformed_messages"]
        for data in (b"\xc1", msgpack.packb([1]), b"\x93\x01"):
            self.c.send(data)
            self.assertEqual(self.c.recv()["code"], 400)
        after = self.c.stats()["malformed_messages"]
        self.assertGreaterEqual(after - before, 3)

    def test_req_client_delimiter_is_tolerated_and_mirrored(self):
        import zmq
        req = zmq.Context.instance().socket(zmq.REQ)
        req.setsockopt(zmq.LINGER, 0)
        try:
            req.connect(self.server.endpoint)
            req.send(msgpack.packb({"v": 1, "t": "ping", "nonce": 77}))
            self.assertTrue(req.poll(10000), "no reply to a REQ client")
            frames = req.recv_multipart()  # REQ strips the mirrored empty delimiter
            self.assertEqual(len(frames), 1)
            pong = msgpack.unpackb(frames[0], raw=False)
            self.assertEqual((pong["t"], pong["nonce"]), ("pong", 77))
        finally:
            req.close(0)

    def test_oversized_message_drops_only_that_connection(self):
        big = self.client(timeout_s=2)
        big.send(msgpack.packb({"v": 1, "t": "submit", "id": "big", "prompt": "a" * (9 << 20)}))
        with self.assertRaises(support.cortexstream.CortexTimeout):
            big.recv()  # no reply: the connection was dropped, the message never processed
        self.expect_next_request_ok()
        self.assert_alive()

    def test_type_and_version(self):
        self.run_cases([
            ("empty map", {}, (400, ("malformed", "unknown_type"))),
            ("missing t", {"v": 1, "id": "a"}, (400, ("malformed", "unknown_type"))),
            ("t not a string", {"v": 1, "t": 7}, (400, ("malformed", "unknown_type"))),
            ("non-string keys", {1: 2, 3: 4}, (400, ("malformed", "unknown_type"))),
            ("unknown t", {"v": 1, "t": "frobnicate"}, (400, ("unknown_type",))),
            ("unknown t with id", {"v": 1, "t": "frobnicate", "id": "u1"}, (400, ("unknown_type",))),
        ])

    def test_wrong_version_is_505_and_not_processed(self):
        for label, msg in [("v 2 ping", {"v": 2, "t": "ping", "nonce": 1}),
                           ("v 0 health", {"v": 0, "t": "health"}),
                           ("v 2 submit", submit(id="v2", v=2)),
                           ("v 99 stats", {"v": 99, "t": "stats"})]:
            with self.subTest(label):
                m = self.expect_error(msg, 505, ("unsupported_version",), id=msg.get("id"))
                self.assertEqual(m.get("supported"), [1])
                # expect_next_request_ok checked that no pong / accepted / stats followed

    def test_submit_envelope_fields(self):
        self.run_cases([
            ("missing id", submit(id=DROP), INVALID),
            ("id not a string", submit(id=5), INVALID),
            ("empty id", submit(id=""), INVALID),
            ("id of 65 bytes", submit(id="x" * 65), TOO_LARGE),
            ("id of 65 bytes in 2-byte characters", submit(id="\u00e9" * 33), TOO_LARGE),
            ("prompt not a string", submit(id="p1", prompt=5), INVALID),
            ("prompt and tokens", submit(id="p2", tokens=[1, 403]), INVALID),
            ("neither prompt nor tokens", submit(id="p3", prompt=DROP), INVALID),
            ("tokens not a list", submit(id="k1", prompt=DROP, tokens="abc"), INVALID),
            ("tokens empty", submit(id="k2", prompt=DROP, tokens=[]), INVALID),
            ("token a string", submit(id="k3", prompt=DROP, tokens=[1, "a"]), INVALID),
            ("token negative", submit(id="k4", prompt=DROP, tokens=[1, -5]), INVALID),
            ("token a float", submit(id="k5", prompt=DROP, tokens=[1, 1.5]), INVALID),
            ("token id == vocab", submit(id="k6", prompt=DROP, tokens=[1, self.n_vocab]), INVALID),
            ("token id >> vocab", submit(id="k7", prompt=DROP, tokens=[1, 1 << 40]), INVALID),
            ("add_bos not a bool", submit(id="b1", add_bos="yes"), INVALID),
            ("stream not a bool", submit(id="s1", stream="no"), INVALID),
            ("priority a string", submit(id="r1", priority="high"), INVALID),
            ("priority a float", submit(id="r2", priority=1.5), INVALID),
            ("deadline_ms negative", submit(id="d1", deadline_ms=-1), INVALID),
            ("deadline_ms a string", submit(id="d2", deadline_ms="soon"), INVALID),
            ("params not a map", dict(submit(id="m1"), params=[1]), INVALID),
            ("want not a map", submit(id="w1", want="all"), INVALID),
            ("want.logprobs 21", submit(id="w2", want={"logprobs": 21}), INVALID),
            ("want.logprobs negative", submit(id="w3", want={"logprobs": -1}), INVALID),
            ("want.token_ids not a bool", submit(id="w4", want={"token_ids": "x"}), INVALID),
            ("want.text not a bool", submit(id="w5", want={"text": "x"}), INVALID),
            ("tags not a map", submit(id="g1", tags=["a"]), INVALID),
            ("tag value not a string", submit(id="g2", tags={"a": 1}), INVALID),
            ("unknown model", submit(id="n1", model="no-such-model"), (404, ("unknown_model",))),
        ])

    def test_sampling_params(self):
        p = lambda id, **kw: submit(id=id, params=kw)  # noqa: E731
        self.run_cases([
            ("max_tokens 0", p("a1", max_tokens=0), INVALID),
            ("max_tokens negative", p("a2", max_tokens=-1), INVALID),
            ("max_tokens a string", p("a3", max_tokens="8"), INVALID),
            ("max_tokens a float", p("a4", max_tokens=1.5), INVALID),
            ("temperature negative", p("b1", temperature=-0.5), INVALID),
            ("temperature a string", p("b2", temperature="hot"), INVALID),
            ("temperature NaN", p("b3", temperature=math.nan), INVALID),
            ("top_k negative", p("c1", top_k=-1), INVALID),
            ("top_k a string", p("c2", top_k="5"), INVALID),
            ("top_p 0", p("d1", top_p=0.0), INVALID),
            ("top_p above 1", p("d2", top_p=1.5), INVALID),
            ("min_p negative", p("e1", min_p=-0.1), INVALID),
            ("min_p above 1", p("e2", min_p=1.5), INVALID),
            ("repetition_penalty 0", p("f1", repetition_penalty=0.0), INVALID),
            ("repetition_penalty negative", p("f2", repetition_penalty=-1.0), INVALID),
            ("presence_penalty a string", p("g1", presence_penalty="x"), INVALID),
            ("presence_penalty infinite", p("g2", presence_penalty=math.inf), INVALID),
            ("frequency_penalty NaN", p("h1", frequency_penalty=math.nan), INVALID),
            ("penalty_last_n a string", p("i1", penalty_last_n="x"), INVALID),
            ("penalty_last_n -2", p("i2", penalty_last_n=-2), INVALID),
            ("seed negative", p("j1", seed=-1), INVALID),
            ("seed a string", p("j2", seed="x"), INVALID),
            ("stop a string", p("k1", stop="x"), INVALID),
            ("stop entry not a string", p("k2", stop=[1]), INVALID),
            ("stop entry empty", p("k3", stop=[""]), INVALID),
            ("17 stop strings", p("k4", stop=["s%d" % i for i in range(17)]), TOO_LARGE),
            ("stop string of 257 bytes", p("k5", stop=["a" * 257]), TOO_LARGE),
            ("stop_token_ids not a list", p("l1", stop_token_ids=5), INVALID),
            ("stop_token_ids >= vocab", p("l2", stop_token_ids=[self.n_vocab]), INVALID),
            ("stop_token_ids negative", p("l3", stop_token_ids=[-1]), INVALID),
            ("ignore_eos not a bool", p("m1", ignore_eos="x"), INVALID),
            ("min_tokens negative", p("n1", min_tokens=-1), INVALID),
            ("min_tokens a string", p("n2", min_tokens="x"), INVALID),
            ("logit_bias not a map", p("o1", logit_bias=[1]), INVALID),
            ("logit_bias above 100", p("o2", logit_bias={1: 100.5}), INVALID),
            ("logit_bias below -100", p("o3", logit_bias={1: -101.0}), INVALID),
            ("logit_bias key >= vocab", p("o4", logit_bias={self.n_vocab: 1.0}), INVALID),
            ("logit_bias key a string", p("o5", logit_bias={"a": 1.0}), INVALID),
            ("logit_bias value a string", p("o6", logit_bias={1: "x"}), INVALID),
        ])

    def test_chat_messages_shape(self):
        user = {"role": "user", "content": "Hi"}
        chat = dict(prompt=DROP, messages=[user])
        self.run_cases([
            ("messages and prompt", submit(messages=[user]), INVALID),
            ("messages and tokens", submit(prompt=DROP, tokens=[1], messages=[user]), INVALID),
            ("messages not an array", submit(prompt=DROP, messages="Hi"), INVALID),
            ("no turns", submit(prompt=DROP, messages=[]), INVALID),
            ("unknown role", submit(prompt=DROP, messages=[{"role": "robot", "content": "Hi"}]), INVALID),
            ("role missing", submit(prompt=DROP, messages=[{"content": "Hi"}]), INVALID),
            ("content a number", submit(prompt=DROP, messages=[{"role": "user", "content": 1}]), INVALID),
            ("image part", submit(prompt=DROP, messages=[{"role": "user", "content": [
                {"type": "image_url", "image_url": {"url": "x"}}]}]), INVALID),
            ("binary in a turn", submit(prompt=DROP, messages=[dict(user, name=b"\x00")]), INVALID),
            ("kwargs not a map", submit(chat_template_kwargs=[1], **chat), INVALID),
            ("kwargs with a prompt", submit(chat_template_kwargs={"a": 1}), INVALID),
            ("1025 turns", submit(prompt=DROP, messages=[user] * 1025), TOO_LARGE),
        ])
        m = self.expect_error(submit(prompt=DROP, messages=[user, {"role": "robot", "content": "x"}]), *INVALID,
                              id="bad")
        self.assertIn("messages[1].role", m["message"])

    def test_prompt_over_the_context_is_422(self):
        self.run_cases([
            ("tokens over n_ctx", submit(id="c1", prompt=DROP, tokens=[1] + [403] * self.n_ctx),
             (422, ("context_overflow",))),
            ("prompt over n_ctx", submit(id="c2", prompt="Once upon a time " * self.n_ctx),
             (422, ("context_overflow",))),
        ])

    def test_values_at_the_limits_are_accepted(self):
        # The boundaries of the rules above: each must be accepted and run.
        cases = [
            ("id of 64 bytes", {"id": "y" * 64}),
            ("largest token id", {"prompt": None, "tokens": [1, self.n_vocab - 1]}),
            ("16 stop strings", {"params": {"stop": ["zq%d" % i for i in range(16)]}}),
            ("stop string of 256 bytes", {"params": {"stop": ["z" * 256]}}),
            ("logit_bias at +-100", {"params": {"logit_bias": {5: 100.0, 6: -100.0}}}),
            ("want.logprobs 20", {"want": {"logprobs": 20}}),
            ("every field", {"add_bos": True, "stream": True, "priority": -3, "deadline_ms": 60000,
                             "tags": {"a": "b"}, "want": {"text": True, "token_ids": True, "logprobs": 0},
                             "params": {"top_k": 40, "top_p": 0.9, "min_p": 0.05, "repetition_penalty": 1.1,
                                        "presence_penalty": 0.5, "frequency_penalty": 0.5,
                                        "penalty_last_n": -1, "seed": 7, "stop_token_ids": [2],
                                        "ignore_eos": True, "min_tokens": 1}}),
        ]
        for label, change in cases:
            with self.subTest(label):
                m = submit(id=change.get("id", "ok"))
                for k, v in change.items():
                    if k == "params":
                        m["params"].update(v)
                    elif v is None:
                        m.pop(k)
                    else:
                        m[k] = v
                self.c.send(m)
                events = list(self.c.track(m["id"]))
                self.assertEqual(events[0]["t"], "accepted", events)
                self.assertEqual(events[-1]["t"], "finished", events)
                self.assertEqual(events[0]["ignored"], [])

    def test_unknown_keys_are_ignored_and_listed(self):
        m = submit(id="unk", bogus=1, x_extra={"a": [1]})
        self.c.send(m)
        s = self.c.track("unk")
        text, fin = s.result()
        self.assertEqual(text, self.reference)
        self.assertEqual(sorted(s.accepted["ignored"]), ["bogus", "x_extra"])
        # Unknown keys on other messages are ignored too.
        self.c.send({"v": 1, "t": "ping", "nonce": 9, "bogus": True})
        pong = self.c.recv()
        self.assertEqual((pong["t"], pong["nonce"]), ("pong", 9))
        # An unknown sampling parameter is not an error either.
        m = submit(id="unk2", params={"mirostat": 2})
        self.c.send(m)
        events = list(self.c.track("unk2"))
        self.assertEqual([events[0]["t"], events[-1]["t"]], ["accepted", "finished"])

    def test_duplicate_active_id_is_409_and_the_running_request_is_untouched(self):
        golden = support.golden_cases()[0]
        long = submit(id="dup", prompt=golden["prompt"],
                      params={"max_tokens": 1000, "ignore_eos": True, "temperature": 0.0})
        s = self.c.track("dup")
        self.c.send(long)
        self.assertEqual(next(s)["t"], "accepted")
        self.c.send(submit(id="dup", prompt="something else"))
        text, fin = s.result()
        err = [m for m in self.c.pending(clear=True) if m.get("t") == "error"]
        self.assertEqual(len(err), 1, "exactly one error for the duplicate")
        self.assertEqual((err[0]["code"], err[0]["name"], err[0]["id"]), (409, "duplicate_id", "dup"))
        self.assertIs(err[0]["terminal"], False)  # it rejects the second submit, not the running request
        self.assertNotIn("seq", err[0])
        self.assertEqual([e["seq"] for e in s.events], list(range(len(s.events))))
        self.assertEqual(fin["reason"], "length")
        self.assertEqual(fin["usage"]["completion_tokens"], 1000)
        self.assertTrue(text.startswith(golden["text"]), "the running request's text is unchanged")
        # Once it has ended, the id may be used again.
        self.c.send(submit(id="dup"))
        self.assertEqual(list(self.c.track("dup"))[-1]["t"], "finished")
        self.expect_next_request_ok()

    def test_errors_naming_a_live_request_are_not_terminal(self):
        golden = support.golden_cases()[0]
        s = self.c.track("live")
        self.c.send(submit(id="live", prompt=golden["prompt"],
                           params={"max_tokens": 600, "ignore_eos": True, "temperature": 0.0}))
        self.assertEqual(next(s)["t"], "accepted")
        for bad in ({"v": 1, "t": "cancel", "id": "live", "ids": "not-a-list"},  # malformed cancel
                    {"v": 1, "t": "frobnicate", "id": "live"},                  # unknown type
                    {"v": 2, "t": "cancel", "id": "live"}):                     # wrong version
            self.c.send(msgpack.packb(bad, use_bin_type=True))
        text, fin = s.result()
        errs = [m for m in self.c.pending(clear=True) if m.get("t") == "error"]
        self.assertEqual(len(errs), 3, errs)
        for e in errs:
            self.assertEqual((e["id"], e["terminal"]), ("live", False), e)
            self.assertNotIn("seq", e)
        self.assertEqual((fin["reason"], fin["usage"]["completion_tokens"]), ("length", 600))
        self.assertEqual([e["seq"] for e in s.events], list(range(len(s.events))))

    def test_multi_frame_message_is_400_and_not_processed(self):
        import zmq
        d = zmq.Context.instance().socket(zmq.DEALER)
        d.setsockopt(zmq.LINGER, 0)
        try:
            d.connect(self.server.endpoint)
            ok = msgpack.packb(submit(id="mf", prompt=PROMPT, params={"max_tokens": 2}), use_bin_type=True)
            d.send_multipart([ok, ok])  # two frames: neither is processed
            self.assertTrue(d.poll(10000), "no reply to a multi-frame message")
            m = msgpack.unpackb(d.recv_multipart()[-1], raw=False)
            self.assertEqual((m["t"], m["code"], m["name"]), ("error", 400, "malformed"), m)
            self.assertEqual((m.get("id"), m["terminal"]), ("mf", True))
            self.assertFalse(d.poll(500), "nothing may follow: the submit in it was not processed")
        finally:
            d.close(0)

    def test_same_id_on_two_connections(self):
        a, b = self.client(), self.client()
        sa = a.submit(id="1", prompt=PROMPT, max_tokens=64, temperature=0)
        sb = b.submit(id="1", prompt=PROMPT, max_tokens=64, temperature=0)
        self.assertEqual(sa.result()[0], sb.result()[0])


if __name__ == "__main__":
    unittest.main()
