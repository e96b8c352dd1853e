"""Access control on the ZeroMQ wire without CURVE (auth.md: the submit's
`auth` field, for loopback/ipc use; protocol.md errors 401/403/429): a
missing or wrong secret is a terminal 401, what the tier forbids is 403, a
burst is 429 with retry_after_ms, and a key's concurrency slot comes back
on every terminal path: finished, cancelled, and client_gone."""

import time

from tests.e2e import auth_support as A
from tests.e2e import support
from tests.e2e.support import cortexstream

SECRETS = {name: A.new_secret() for name in ("ann", "ben", "cat", "dan")}
TIERS = {
    "basic": {"requests_per_minute": 6, "max_priority": 0, "max_tokens": 32},
    "one": {"max_concurrent": 1},
    "open": {},
}
KEYS = [A.key_entry("ann", "basic", SECRETS["ann"]), A.key_entry("ben", "one", SECRETS["ben"]),
        A.key_entry("cat", "open", SECRETS["cat"]), A.key_entry("dan", "basic", SECRETS["dan"])]
LONG = dict(prompt="Once upon a time", max_tokens=400, ignore_eos=True, temperature=0)


class AuthWireTest(A.AuthServerTestCase):
    TIERS, KEYS = TIERS, KEYS
    SERVER_ARGS = ("--http", "off")

    def rejected(self, client, **kw):
        with self.assertRaises(cortexstream.CortexError) as cm:
            client.complete(**kw)
        return cm.exception

    def complete(self, key, client=None, **kw):
        return (client or self.client()).complete(extra={"auth": SECRETS[key]}, **kw)

    def test_missing_or_wrong_auth_is_terminal_401(self):
        c = self.client()
        for extra in (None, {"auth": "cs-" + "x" * 43}, {"auth": SECRETS["ann"][:-2]}):
            e = self.rejected(c, prompt="Hi", max_tokens=2, extra=extra)
            self.assertEqual((e.code, e.name), (401, "unauthenticated"))
            self.assertNotIn("cs-", e.message)  # never echoes a secret
        # Health and models need no key (they say nothing about requests).
        self.assertEqual(c.health()["status"], "ready")

    def test_priority_and_max_tokens_above_the_tier_are_403(self):
        c = self.client()
        e = self.rejected(c, prompt="Hi", max_tokens=2, priority=1, extra={"auth": SECRETS["dan"]})
        self.assertEqual((e.code, e.name), (403, "forbidden"))
        self.assertIn("priority 1", e.message)
        e = self.rejected(c, prompt="Hi", max_tokens=33, extra={"auth": SECRETS["dan"]})
        self.assertEqual((e.code, e.name), (403, "forbidden"))
        self.assertFalse(e.retryable)
        text, fin = self.complete("dan", prompt="Hi", max_tokens=2, temperature=0)
        self.assertEqual(fin["reason"], "length")

    def test_burst_is_429_with_retry_after_ms(self):
        c = self.client()
        for _ in range(6):
            self.complete("ann", c, prompt="Hi", max_tokens=1)
        e = self.rejected(c, prompt="Hi", max_tokens=1, extra={"auth": SECRETS["ann"]})
        self.assertEqual((e.code, e.name), (429, "rate_limited"))
        self.assertTrue(e.retryable)
        self.assertTrue(1 <= e.retry_after_ms <= 10000, e.retry_after_ms)  # one request per 10 s
        # Another key is untouched.
        self.complete("cat", c, prompt="Hi", max_tokens=1)
        time.sleep(e.retry_after_ms / 1000.0)
        self.complete("ann", c, prompt="Hi", max_tokens=1)

    def wait_running(self, key, n):
        support.wait_until(lambda: self.client().stats()["keys"][key]["running"] == n, 10,
                           what="%s running == %d" % (key, n))

    def test_concurrency_released_on_cancel_and_client_gone(self):
        c = self.client()
        s = c.submit(extra={"auth": SECRETS["ben"]}, **LONG)
        next(iter(s))  # accepted: it holds ben's one slot
        e = self.rejected(self.client(), prompt="Hi", max_tokens=1, extra={"auth": SECRETS["ben"]})
        self.assertEqual((e.code, e.name), (429, "rate_limited"))
        s.cancel()
        _, fin = s.result()
        self.assertEqual(fin["reason"], "cancelled")
        self.wait_running("ben", 0)
        self.complete("ben", prompt="Hi", max_tokens=1)  # the slot is back
        # The client vanishes mid-stream: client_gone frees the slot too.
        gone = cortexstream.Client(self.server.endpoint, timeout_s=30)
        s = gone.submit(extra={"auth": SECRETS["ben"]}, **LONG)
        next(iter(s))
        gone.close()
        self.wait_running("ben", 0)
        self.complete("ben", prompt="Hi", max_tokens=1)
        stats = self.client().stats()["keys"]["ben"]
        self.assertEqual(stats["tier"], "one")
        self.assertGreaterEqual(stats["rejected_limited"], 1)


if __name__ == "__main__":
    support.unittest.main()
