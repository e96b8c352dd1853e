"""Shared fixture of the end-to-end tests: paths, a real cortexd on a free
loopback port, and golden data. Imports of this module put
clients/python on sys.path so tests can `import cortexstream`.

Environment: CORTEX_BIN_DIR (default <repo>/build/bin) holds cortexd and
cortex; CORTEX_SHARED_DIR (default <repo>/../shared) holds models and golden
data."""

import atexit
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import weakref

REPO_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN_DIR = os.environ.get("CORTEX_BIN_DIR") or os.path.join(REPO_DIR, "build", "bin")
SHARED_DIR = os.environ.get("CORTEX_SHARED_DIR") or os.path.join(REPO_DIR, "..", "shared")
# The story model ships with the repository (the same file as
# ../shared/models/stories260K.gguf).
MODEL_PATH = os.path.join(REPO_DIR, "models", "stories260K.gguf")

# Whether the reference data (llama.cpp's outputs, tiny models, vocabularies
# and chat templates: ../shared/golden) is there. A clone alone has none: the
# cases that compare against it are skipped, named in unittest's output, and
# scripts/test says so.
REFERENCE_DATA_PRESENT = os.path.exists(os.path.join(SHARED_DIR, "golden", "README.md"))
NEEDS_REFERENCE = "needs the reference data of %s/golden, which a clone alone lacks (set CORTEX_SHARED_DIR)" % SHARED_DIR
needs_reference_data = unittest.skipUnless(REFERENCE_DATA_PRESENT, NEEDS_REFERENCE)


def reference_file(rel):
    """A file of the reference data by its path under golden/: ../shared's
    where the reference data is there (a file missing from it fails its
    test), else the repository's copy (tests/data/reference/, the shipped
    model's files only), else ../shared's path, which the caller then fails
    to open (tests that need more than the copies are marked
    needs_reference_data)."""
    shared = os.path.join(SHARED_DIR, "golden", rel)
    copy = os.path.join(REPO_DIR, "tests", "data", "reference", rel)
    return shared if REFERENCE_DATA_PRESENT or not os.path.exists(copy) else copy


GOLDEN_PATH = reference_file(os.path.join("generation", "stories260K.json"))

sys.path.insert(0, os.path.join(REPO_DIR, "clients", "python"))
import cortexstream  # noqa: E402


def wait_until(predicate, timeout_s, interval_s=0.01, what="condition"):
    """Polls predicate() until it returns a truthy value, which is returned.
    Fails with AssertionError after timeout_s seconds."""
    deadline = time.monotonic() + timeout_s
    while True:
        v = predicate()
        if v:
            return v
        if time.monotonic() >= deadline:
            raise AssertionError("timed out after %.1f s waiting for %s" % (timeout_s, what))
        time.sleep(interval_s)


def sanitizer_slowdown():
    """How many times a wall-clock limit grows for the cortexd under test: a
    TSan build runs the engine 5-15x slower (CAF instrumented too), an ASan
    build about 2x; an optimized one 1 (style.md rule 7: a slow build fails
    no test). Read from the binary: each runtime's entry point is named in it."""
    with open(os.path.join(BIN_DIR, "cortexd"), "rb") as f:
        exe = f.read()
    return 5 if b"__tsan_init" in exe else 2 if b"__asan_init" in exe else 1


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def golden_cases():
    """stories260K greedy cases: dicts with `prompt` (or None), `tokens` and
    `text` (the 128 greedy tokens' text as llama.cpp generates it)."""
    with open(GOLDEN_PATH) as f:
        doc = json.load(f)
    return [{"prompt": c.get("text"), "tokens": c["tokens"],
             "text": bytes.fromhex(c["greedy_bytes_hex"]).decode("utf-8"), "n_gen": len(c["greedy"])}
            for c in doc["cases"]]


def golden_token_ids(i):
    """The greedy token ids of golden case i."""
    with open(GOLDEN_PATH) as f:
        return json.load(f)["cases"][i]["greedy"]


# The Cortexd objects of this process, held weakly: one still referenced
# and running when the process exits (a test class whose own setUpClass
# raised after starting it, so unittest never ran its tearDownClass) is
# killed then, not left orphaned.
_LIVE_SERVERS = weakref.WeakSet()


@atexit.register
def _kill_live_servers():
    for server in list(_LIVE_SERVERS):
        server.close()


class Cortexd:
    """A real build/bin/cortexd on a free loopback port, model stories260K.

    start() waits until `health` says ready (or fails); stop() sends a signal
    and returns the exit code. stderr goes to a temporary file shown by log().
    """

    def __init__(self, *args, ready_timeout_s=60.0, client_kwargs=None, env=None, model=None):
        self.args = list(args)
        self.model = model or MODEL_PATH  # another GGUF file (e.g. a synthetic one)
        # Extra environment variables of the server (e.g. CORTEX_FAULTS).
        self.env = dict(os.environ, **env) if env else None
        # Credentials of every Client made here (readiness probe included),
        # e.g. CURVE keys for a server with --curve-secret-key.
        self.client_kwargs = dict(client_kwargs or {})
        self.ready_timeout_s = ready_timeout_s
        self.proc = None
        self.endpoint = None
        self.http = None  # "http://127.0.0.1:PORT" (HTTP gateway), unless the args set --http
        self._clients = []
        self._log = None
        _LIVE_SERVERS.add(self)

    def start(self):
        exe = os.path.join(BIN_DIR, "cortexd")
        if not os.path.exists(exe):
            raise AssertionError("cortexd not found at %s (build it, or set CORTEX_BIN_DIR)" % exe)
        if not os.path.exists(self.model):
            raise AssertionError("model not found at %s (set CORTEX_SHARED_DIR)" % self.model)
        for attempt in range(3):  # the free port may be taken between probe and bind
            self.endpoint = "tcp://127.0.0.1:%d" % free_port()
            http_args = []
            # The golden data these tests compare with was made with an F32
            # K/V cache: servers use one unless a test picks a type.
            if "--kv-type" not in self.args:
                http_args += ["--kv-type", "f32"]
            if "--http" not in self.args:
                port = free_port()
                self.http = "http://127.0.0.1:%d" % port
                http_args += ["--http", "127.0.0.1:%d" % port]
            if self._log is not None:
                self._log.close()
            self._log = tempfile.TemporaryFile(mode="w+b")
            self.proc = subprocess.Popen(
                [exe, "--model", self.model, "--endpoint", self.endpoint] + http_args + self.args,
                stdin=subprocess.DEVNULL, stdout=self._log, stderr=self._log, env=self.env)
            if self._wait_ready():
                return self
            if self.proc.poll() is None:
                self.stop(signal.SIGKILL)
                raise AssertionError("cortexd not ready within %.0f s; log:\n%s" % (self.ready_timeout_s, self.log()))
        raise AssertionError("cortexd exited at startup (code %s); log:\n%s" % (self.proc.returncode, self.log()))

    def _wait_ready(self):
        c = cortexstream.Client(self.endpoint, timeout_s=0.5, **self.client_kwargs)
        try:
            deadline = time.monotonic() + self.ready_timeout_s
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    return False
                try:
                    if c.health().get("status") == "ready":
                        return True
                except cortexstream.CortexTimeout:
                    pass
                time.sleep(0.02)
            return False
        finally:
            c.close()

    def client(self, timeout_s=30.0):
        """A new connection, closed by stop()."""
        c = cortexstream.Client(self.endpoint, timeout_s=timeout_s, **self.client_kwargs)
        self._clients.append(c)
        return c

    def stop(self, sig=signal.SIGTERM, timeout_s=30.0):
        """Signals the server and returns its exit code (kills it after timeout_s)."""
        for c in self._clients:
            c.close()
        self._clients = []
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError("cortexd did not exit within %.0f s of signal %d" % (timeout_s, sig))
        return self.proc.returncode

    def close(self):
        """Releases everything: clients, a still running process (killed), the log."""
        try:
            if self.proc is not None and self.proc.poll() is None:
                self.stop(signal.SIGKILL)
            for c in self._clients:
                c.close()
            self._clients = []
        finally:
            if self._log is not None:
                self._log.close()
                self._log = None

    def log(self, tail_chars=20000):
        """The server's output so far: its last tail_chars characters (None: all)."""
        if self._log is None:
            return ""
        self._log.flush()
        self._log.seek(0)
        text = self._log.read().decode("utf-8", "replace")
        return text[-tail_chars:] if tail_chars else text


class ServerTestCase(unittest.TestCase):
    """One cortexd per test class, started with SERVER_ARGS."""

    SERVER_ARGS = ()
    server = None

    @classmethod
    def setUpClass(cls):
        cls.server = Cortexd(*cls.SERVER_ARGS).start()
        # Runs after tearDownClass, and also when a subclass's setUpClass
        # raises after this (unittest then skips tearDownClass): the
        # server is killed either way (a no-op once tearDownClass stopped it).
        cls.addClassCleanup(cls.server.close)

    @classmethod
    def tearDownClass(cls):
        if cls.server is not None:
            try:
                code = cls.server.stop()
                if code != 0:
                    raise AssertionError("cortexd exited with %s; log:\n%s" % (code, cls.server.log()))
            finally:
                cls.server.close()

    def client(self, timeout_s=30.0):
        return self.server.client(timeout_s)

    def assert_alive(self):
        """The server still answers a small valid request on a fresh connection."""
        text, fin = self.client().complete(prompt="Once upon a time", max_tokens=4, temperature=0)
        self.assertIn(fin["reason"], ("length", "stop"))
