"""A TCP man in the middle for the encryption tests: listens on a free
loopback port, forwards every connection to a target port, and records the
bytes of both directions, so a test can look for text that must never cross
the network in clear."""

import selectors
import socket
import threading


class TcpRelay:
    """Relays 127.0.0.1:<port> to 127.0.0.1:<target_port> on a thread.
    ``client_bytes()`` / ``server_bytes()``: everything the clients sent /
    the server sent so far, over all connections."""

    def __init__(self, target_port):
        self.target_port = target_port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.setblocking(False)
        self.port = self._listener.getsockname()[1]
        self.endpoint = "tcp://127.0.0.1:%d" % self.port
        self._lock = threading.Lock()
        self._sent = {"client": bytearray(), "server": bytearray()}
        self._sel = selectors.DefaultSelector()
        self._sel.register(self._listener, selectors.EVENT_READ, None)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def client_bytes(self):
        with self._lock:
            return bytes(self._sent["client"])

    def server_bytes(self):
        with self._lock:
            return bytes(self._sent["server"])

    def close(self):
        self._stop.set()
        self._thread.join(5)
        for key in list(self._sel.get_map().values()):
            key.fileobj.close()
        self._sel.close()

    def _run(self):
        while not self._stop.is_set():
            for key, _ in self._sel.select(0.05):
                if key.data is None:
                    self._accept()
                else:
                    self._forward(key.fileobj, *key.data)

    def _accept(self):
        try:
            client, _ = self._listener.accept()
        except BlockingIOError:
            return
        server = socket.create_connection(("127.0.0.1", self.target_port))
        for s in (client, server):
            s.setblocking(True)  # writes to the peer may wait; reads happen only when ready
        self._sel.register(client, selectors.EVENT_READ, (server, "client"))
        self._sel.register(server, selectors.EVENT_READ, (client, "server"))

    def _forward(self, src, dst, who):
        try:
            data = src.recv(65536)
        except OSError:
            data = b""
        if not data:  # one side closed: close both
            for s in (src, dst):
                try:
                    self._sel.unregister(s)
                except (KeyError, ValueError):
                    pass
                s.close()
            return
        with self._lock:
            self._sent[who] += data
        try:
            dst.sendall(data)
        except OSError:
            pass
