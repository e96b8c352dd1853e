"""Shared pieces of the access-control tests (auth.md): keys files written
the way an operator would (secrets hashed with Python's hashlib, an
implementation independent of the server's), and a small HTTP client that
returns status, headers and body whatever the status."""

import hashlib
import http.client
import json
import os
import secrets
import tempfile
import urllib.parse

from tests.e2e import support


def new_secret():
    """A secret of auth.md's shape: cs- + 43 base64url characters."""
    return "cs-" + secrets.token_urlsafe(32)


def key_entry(id, tier, secret, curve_public=None):
    k = {"id": id, "tier": tier, "sha256": hashlib.sha256(secret.encode()).hexdigest()}
    if curve_public:
        k["curve_public"] = curve_public
    return k


class KeysFile:
    """A keys file in a temporary directory; write() replaces it atomically."""

    def __init__(self, tiers, keys):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "keys.json")
        self.write(tiers, keys)

    def write(self, tiers, keys):
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"tiers": tiers, "keys": keys}, f)
        os.replace(tmp, self.path)

    def close(self):
        self.dir.cleanup()


class AuthServerTestCase(support.ServerTestCase):
    """One cortexd per test class, started with --auth on a keys file of the
    class's TIERS and KEYS (cls.keys, rewritable for SIGHUP) and SERVER_ARGS."""

    TIERS = {}
    KEYS = []

    @classmethod
    def setUpClass(cls):
        cls.keys = KeysFile(cls.TIERS, cls.KEYS)
        cls.SERVER_ARGS = ("--auth", cls.keys.path) + tuple(cls.SERVER_ARGS)
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        try:
            super().tearDownClass()
        finally:
            cls.keys.close()


def http_call(base, method, path, body=None, key=None, headers=None, timeout_s=30):
    """(status, headers as a dict with lowercase names, body bytes)."""
    u = urllib.parse.urlparse(base)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout_s)
    h = dict(headers or {})
    if key is not None:
        h["Authorization"] = "Bearer " + key
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        h["Content-Type"] = "application/json"
    try:
        conn.request(method, path, body=data, headers=h)
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def metric_value(text, name, **labels):
    """The value of the sample `name{labels}` in Prometheus text (labels must match exactly), or None."""
    for line in text.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        head, _, value = line.rpartition(" ")
        got = {}
        if "{" in head:
            for part in head[head.index("{") + 1:-1].split(","):
                k, _, v = part.partition("=")
                got[k] = v.strip('"')
        if got == {k: str(v) for k, v in labels.items()}:
            return float(value)
    return None
