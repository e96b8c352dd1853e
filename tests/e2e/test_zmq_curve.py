"""CURVE on the ZeroMQ gateway (auth.md): cortexd --curve-secret-key with a
keys file listing one client's curve_public. Keys are made by the CLI under
test (`cortex keys curve`). A listed key gets the golden generation (Python
client and `cortex submit`); an unlisted key, a client expecting another
server key and a plaintext client get no reply at all, and the refused
handshakes are counted in /metrics. Through a TCP man in the middle, the
prompt and the generated text never appear in the captured bytes; the
control run (plaintext with the `auth` field, same relay) shows that they
do without CURVE, so the check can fail."""

import json
import os
import stat
import subprocess
import tempfile
import unittest

import zmq

from tests.e2e import auth_support as A
from tests.e2e import http_support, support
from tests.e2e.support import cortexstream
from tests.e2e.tcp_relay import TcpRelay

PROMPT = "Once upon a time, a purple dragon named Quillsworth"
SECRET = A.new_secret()


def make_pair(dir, name):
    """Writes NAME.key / NAME.pub with `cortex keys curve`; returns (public, secret) in Z85."""
    out = os.path.join(dir, name)
    r = subprocess.run([os.path.join(support.BIN_DIR, "cortex"), "keys", "curve", "--out", out],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    pub = cortexstream.read_curve_key(out + ".pub")
    assert '"curve_public": "%s"' % pub in r.stdout, r.stdout
    return pub, cortexstream.read_curve_key(out + ".key")


def metrics_text(http):
    return http_support.request(http, "GET", "/metrics")[2].decode()


def rejections_unauthenticated(http):
    """cortex_rejections_total{code="unauthenticated", key="unknown"}: refusals whose credential named no key (0 when absent)."""
    return A.metric_value(metrics_text(http), "cortex_rejections_total", code="unauthenticated", key="unknown") or 0.0


class CurveFixture:
    """Key pairs (server, alice listed, mallory unlisted) in a temporary directory and a keys file."""

    def __init__(self):
        self.dir = tempfile.TemporaryDirectory()
        d = self.dir.name
        self.server_pub, _ = make_pair(d, "server")
        self.alice_pub, self.alice_secret = make_pair(d, "alice")
        self.mallory_pub, self.mallory_secret = make_pair(d, "mallory")
        self.path = lambda name: os.path.join(d, name)
        self.keys = A.KeysFile({"open": {}}, [A.key_entry("alice", "open", SECRET, curve_public=self.alice_pub)])

    def curve_args(self):
        return ("--auth", self.keys.path, "--curve-secret-key", self.path("server.key"))

    def alice(self):
        return dict(server_key=self.server_pub, secret_key=self.alice_secret)

    def close(self):
        self.keys.close()
        self.dir.cleanup()


class CurveServerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.fx = CurveFixture()
        cls.server = support.Cortexd(*cls.fx.curve_args(), client_kwargs=cls.fx.alice()).start()

    @classmethod
    def tearDownClass(cls):
        try:
            code = cls.server.stop()
            assert code == 0, "cortexd exited with %s; log:\n%s" % (code, cls.server.log())
        finally:
            cls.server.close()
            cls.fx.close()

    def refused_client(self, **kw):
        c = cortexstream.Client(self.server.endpoint, timeout_s=2, **kw)
        self.addCleanup(c.close)
        return c

    def assert_no_reply(self, c):
        with self.assertRaises(cortexstream.CortexTimeout):
            c.ping()
        with self.assertRaises(cortexstream.CortexTimeout):
            c.complete(prompt=PROMPT, max_tokens=4)

    def test_listed_key_gets_the_golden_generation(self):
        c = self.server.client()
        case = support.golden_cases()[0]
        text, fin = c.complete(tokens=case["tokens"], max_tokens=case["n_gen"], temperature=0)
        self.assertEqual(text, case["text"])
        self.assertEqual((fin["reason"], fin["usage"]["completion_tokens"]), ("length", case["n_gen"]))

    def test_requests_are_counted_under_the_curve_key_id(self):
        self.server.client().complete(prompt=PROMPT, max_tokens=4, temperature=0)
        text = metrics_text(self.server.http)
        alice = [line for line in text.splitlines()
                 if line.startswith("cortex_requests_total{") and 'key="alice"' in line]
        self.assertTrue(alice, "no cortex_requests_total sample for key alice:\n" + text)

    def test_unlisted_key_gets_no_reply_and_is_counted(self):
        before = rejections_unauthenticated(self.server.http)
        self.assert_no_reply(self.refused_client(server_key=self.fx.server_pub, secret_key=self.fx.mallory_secret))
        support.wait_until(lambda: rejections_unauthenticated(self.server.http) > before, 10,
                           what="the refused CURVE handshake counted in cortex_rejections_total")
        self.server.client().ping()  # the server still serves the listed key

    def test_client_expecting_another_server_key_gets_no_reply(self):
        self.assert_no_reply(self.refused_client(server_key=self.fx.mallory_pub, secret_key=self.fx.alice_secret))

    def test_plaintext_client_gets_no_reply_even_with_a_valid_secret(self):
        self.assert_no_reply(self.refused_client(auth=SECRET))

    def test_load_bench_over_curve(self):
        exe = os.path.join(support.BIN_DIR, "cortex_load")
        if not os.path.exists(exe):
            self.skipTest("cortex_load not built (bench/ disabled)")
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "load.json")
            p = subprocess.run([exe, "--endpoint", self.server.endpoint, "--curve-server-key", self.fx.path("server.pub"),
                                "--curve-key", self.fx.path("alice"), "--streams", "2", "--requests", "4",
                                "--prompt-tokens", "16", "--output-tokens", "8", "--quiet", "--json", out],
                               capture_output=True, text=True, timeout=120)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            with open(out) as f:
                doc = json.load(f)
        self.assertEqual((doc["mode"], doc["target"]["curve"]), ("wire-curve", True))
        self.assertEqual((doc["results"]["requests_ok"], doc["results"]["completion_tokens"]), (4, 32), doc["results"])

    def test_cli_submit_over_curve(self):
        case = next(c for c in support.golden_cases() if c["prompt"] is not None)
        cli = [os.path.join(support.BIN_DIR, "cortex"), "submit", "--endpoint", self.server.endpoint,
               "--curve-server-key", self.fx.path("server.pub"), "--prompt", case["prompt"],
               "--max-tokens", str(case["n_gen"]), "--temperature", "0", "--timeout-ms", "5000"]
        r = subprocess.run(cli + ["--curve-key", self.fx.path("alice")], capture_output=True, text=True, timeout=60)
        self.assertEqual((r.returncode, r.stdout), (0, case["text"] + "\n"), r.stderr)
        r = subprocess.run(cli + ["--curve-key", self.fx.path("mallory")], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 1)
        self.assertIn("refused this CURVE key", r.stderr)
        r = subprocess.run(cli[:4] + ["--curve-server-key", self.fx.path("server.pub"), "--prompt", "x"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--curve-key", r.stderr)


class CurveEncryptionTest(unittest.TestCase):
    """The same request through a recording TCP relay, with and without CURVE."""

    @classmethod
    def setUpClass(cls):
        cls.fx = CurveFixture()

    @classmethod
    def tearDownClass(cls):
        cls.fx.close()

    def relayed_generation(self, server_args, **client_kw):
        """Runs PROMPT through a relay to a cortexd started with server_args;
        returns (relay, chunk texts, all text)."""
        server = support.Cortexd(*server_args, "--http", "off", client_kwargs=client_kw).start()
        self.addCleanup(server.close)
        relay = TcpRelay(int(server.endpoint.rsplit(":", 1)[1]))
        self.addCleanup(relay.close)
        c = cortexstream.Client(relay.endpoint, timeout_s=30, **client_kw)
        self.addCleanup(c.close)
        s = c.submit(prompt=PROMPT, max_tokens=64, temperature=0)
        text, fin = s.result()
        self.assertEqual(fin["usage"]["completion_tokens"], 64)
        chunks = [e["text"] for e in s.events if e["t"] == "chunk" and e.get("text")]
        self.assertEqual(server.stop(), 0, server.log())
        return relay, chunks, text

    def test_curve_traffic_never_shows_the_prompt_or_the_text(self):
        relay, chunks, text = self.relayed_generation(self.fx.curve_args(), **self.fx.alice())
        up, down = relay.client_bytes(), relay.server_bytes()
        self.assertIn(b"CURVE", up[:64], "the capture holds the ZMTP greeting: it is this connection's traffic")
        self.assertGreater(len(down), len(text), "the generated text crossed the relay (encrypted)")
        for what in [PROMPT, text] + [t for t in chunks if len(t.encode()) >= 8]:
            self.assertNotIn(what.encode(), up + down, "in clear through CURVE: %r" % what)
        for key in (b"submit", b"prompt", b"chunk", b"finished"):
            self.assertNotIn(key, up + down)

    def test_control_without_curve_the_same_capture_shows_them(self):
        relay, chunks, text = self.relayed_generation(("--auth", self.fx.keys.path), auth=SECRET)
        up, down = relay.client_bytes(), relay.server_bytes()
        self.assertIn(b"NULL", up[:64])
        self.assertIn(PROMPT.encode(), up)
        self.assertIn(SECRET.encode(), up, "the auth field crosses in clear: why it is for loopback/ipc only")
        self.assertTrue(chunks)
        for t in chunks:
            self.assertIn(t.encode(), down)


class KeysCurveCliTest(unittest.TestCase):
    """`cortex keys curve`: a matching Z85 pair, the secret private, nothing overwritten without --force."""

    def keys_curve(self, *args):
        return subprocess.run([os.path.join(support.BIN_DIR, "cortex"), "keys", "curve"] + list(args),
                              capture_output=True, text=True, timeout=30)

    def read(self, path):
        with open(path, "rb") as f:
            return f.read()

    def test_writes_a_private_matching_pair_and_never_overwrites_without_force(self):
        with tempfile.TemporaryDirectory() as d:
            name = os.path.join(d, "k")
            r = self.keys_curve("--out", name)
            self.assertEqual(r.returncode, 0, r.stderr)
            secret, pub = self.read(name + ".key"), self.read(name + ".pub")
            self.assertEqual((len(secret), secret[-1:], len(pub), pub[-1:]), (41, b"\n", 41, b"\n"))
            self.assertEqual(zmq.curve_public(secret[:40]), pub[:40])
            self.assertEqual(stat.S_IMODE(os.stat(name + ".key").st_mode), 0o600)
            r = self.keys_curve("--out", name)
            self.assertEqual(r.returncode, 1)
            self.assertIn("--force", r.stderr)
            self.assertEqual((self.read(name + ".key"), self.read(name + ".pub")), (secret, pub))
            os.chmod(name + ".key", 0o644)
            r = self.keys_curve("--out", name, "--force")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertNotEqual(self.read(name + ".key"), secret)
            self.assertEqual(stat.S_IMODE(os.stat(name + ".key").st_mode), 0o600)
            self.assertEqual(zmq.curve_public(self.read(name + ".key")[:40]), self.read(name + ".pub")[:40])
        self.assertEqual(self.keys_curve().returncode, 2)


if __name__ == "__main__":
    unittest.main()
