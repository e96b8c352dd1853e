"""HTTP helpers of the end-to-end tests (standard library only): requests to
a Cortexd's HTTP gateway (support.Cortexd.http), its /metrics parsed with
Debian's python3-prometheus-client, and a client that hangs up mid-request."""

import http.client
import json
import socket
import time
import urllib.parse

from prometheus_client.parser import text_string_to_metric_families


def _host_port(base):
    u = urllib.parse.urlsplit(base)
    return u.hostname, u.port


def request(base, method, path, body=None, headers=None, timeout_s=30.0):
    """One request on a fresh connection: (status, {lower-case header: value},
    body bytes). A dict body is sent as JSON; bytes as they are."""
    host, port = _host_port(base)
    conn = http.client.HTTPConnection(host, port, timeout=timeout_s)
    try:
        h = dict(headers or {})
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
            h.setdefault("Content-Type", "application/json")
        conn.request(method, path, body=body, headers=h)
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def post_json(base, path, body):
    """POST a JSON body; returns (status, decoded JSON answer)."""
    status, _, data = request(base, "POST", path, body)
    return status, json.loads(data)


def metrics(base):
    """GET /metrics: (content type, {family name: family}) as
    prometheus_client parses it (counter families lose their `_total`)."""
    status, headers, data = request(base, "GET", "/metrics")
    if status != 200:
        raise AssertionError("GET /metrics: %d %r" % (status, data[:200]))
    return headers.get("content-type", ""), {f.name: f for f in text_string_to_metric_families(data.decode())}


def sample_sum(families, family, sample_name=None, **labels):
    """The sum of a family's samples whose labels include `labels` (and, if
    given, whose sample name is sample_name)."""
    f = families.get(family)
    if f is None:
        return 0.0
    return sum(s.value for s in f.samples
               if (sample_name is None or s.name == sample_name)
               and all(s.labels.get(k) == v for k, v in labels.items()))


def hang_up_mid_request(base, path, body, read_bytes=0, timeout_s=30.0):
    """Sends a POST, reads until `read_bytes` bytes of the answer arrived (0:
    reads nothing), then closes the connection. Returns what was read."""
    host, port = _host_port(base)
    payload = json.dumps(body).encode()
    s = socket.create_connection((host, port), timeout=timeout_s)
    try:
        s.sendall(("POST %s HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\n"
                   "Content-Length: %d\r\n\r\n" % (path, host, port, len(payload))).encode() + payload)
        got = b""
        deadline = time.monotonic() + timeout_s
        while len(got) < read_bytes and time.monotonic() < deadline:
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
        return got
    finally:
        s.close()
