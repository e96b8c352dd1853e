"""64 SSE streams over HTTP and 16 over ZeroMQ at once on one cortexd
(stories260K, greedy, ignore_eos, fixed max_tokens): every stream completes
(one finish_reason, then [DONE]) and is exact: its text and token counts
equal those of the same prompt run alone, first, on the same server. That
is the determinism property: a sequence batched with 79 others, from either
gateway, computes what it computes alone. Afterwards nothing runs or waits
and no KV block is in use."""

import http.client
import json
import threading
import unittest
import urllib.parse

from tests.e2e import support

N_HTTP = 64
N_WIRE = 16
MAX_TOKENS = 40
# Distinct prompts; stream k uses PROMPTS[k % len(PROMPTS)], so every prompt
# runs several times at once over both gateways.
PROMPTS = ["Once upon a time", "Lily and Tom went to the park", "The little dog was sad because",
           "One day, a big bird", "Sam had a red ball.", "There was a girl named Sue who",
           "The sun was hot and", "Mom said, \"Let's go", "A cat sat on the mat and",
           "Tim wanted to play with", "In a small house lived", "The boy found a box",
           "It was a rainy day.", "Ben and his friend", "The tree was very tall,", "Anna liked to sing"]
GENERATION = {"max_tokens": MAX_TOKENS, "temperature": 0, "ignore_eos": True}


def sse_completion(base_url, prompt, start):
    """Streams one POST /v1/completions on its own keep-alive connection
    after `start` (a barrier) releases; returns what the stream carried."""
    u = urllib.parse.urlsplit(base_url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    out = {"status": None, "texts": [], "finish_reasons": [], "usage": None, "done": 0, "after_done": 0,
           "errors": [], "bad_lines": []}
    try:
        body = dict(GENERATION, prompt=prompt, stream=True, stream_options={"include_usage": True})
        start.wait()
        conn.request("POST", "/v1/completions", json.dumps(body), {"Content-Type": "application/json"})
        resp = conn.getresponse()
        out["status"] = resp.status
        out["content_type"] = resp.getheader("Content-Type")
        while True:
            line = resp.readline()  # http.client undoes the chunked framing
            if not line:
                break
            line = line.rstrip(b"\r\n")
            if not line:
                continue
            if not line.startswith(b"data: "):
                out["bad_lines"].append(line)
                continue
            data = line[len(b"data: "):]
            if out["done"]:
                out["after_done"] += 1
            if data == b"[DONE]":
                out["done"] += 1
                continue
            event = json.loads(data)
            if "error" in event:
                out["errors"].append(event["error"])
                continue
            if event.get("usage"):
                out["usage"] = event["usage"]
            for c in event["choices"]:
                out["texts"].append(c["text"])
                if c["finish_reason"] is not None:
                    out["finish_reasons"].append(c["finish_reason"])
    except Exception as e:  # reported by the test, with the stream's index
        out["errors"].append(repr(e))
    finally:
        conn.close()
    return out


class HttpAndWireLoadTest(support.ServerTestCase):
    # Room for all 80 requests in one batch.
    SERVER_ARGS = ("--max-running", "96")

    def test_80_concurrent_streams_equal_their_serial_runs(self):
        # The reference: each prompt alone, one after another.
        ref_client = self.client(timeout_s=60)
        reference = {}
        for p in PROMPTS:
            text, fin = ref_client.complete(prompt=p, **GENERATION)
            self.assertEqual(fin["reason"], "length", p)
            self.assertEqual(fin["usage"]["completion_tokens"], MAX_TOKENS, p)
            self.assertTrue(text, p)
            reference[p] = (text, fin["usage"]["prompt_tokens"])

        start = threading.Barrier(N_HTTP + 1, timeout=60)
        http_results = [None] * N_HTTP
        wire_results = [None] * N_WIRE

        def run_http(k):
            http_results[k] = sse_completion(self.server.http, PROMPTS[k % len(PROMPTS)], start)

        def run_wire():
            client = self.server.client(timeout_s=60)
            start.wait()
            streams = [client.submit(prompt=PROMPTS[k % len(PROMPTS)], **GENERATION) for k in range(N_WIRE)]
            for k, s in enumerate(streams):
                try:
                    wire_results[k] = s.result()
                except Exception as e:
                    wire_results[k] = e

        threads = [threading.Thread(target=run_http, args=(k,)) for k in range(N_HTTP)]
        threads.append(threading.Thread(target=run_wire))
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        self.assertFalse([t for t in threads if t.is_alive()], "streams still running after 120 s")

        for k, r in enumerate(http_results):
            prompt = PROMPTS[k % len(PROMPTS)]
            want_text, want_prompt_tokens = reference[prompt]
            where = "HTTP stream %d (%r)" % (k, prompt)
            self.assertEqual(r["errors"], [], where)
            self.assertEqual(r["status"], 200, where)
            self.assertTrue(r["content_type"].startswith("text/event-stream"), where)
            self.assertEqual(r["bad_lines"], [], where)
            self.assertEqual(r["finish_reasons"], ["length"], where)
            self.assertEqual((r["done"], r["after_done"]), (1, 0), where + ": one [DONE], last")
            self.assertEqual("".join(r["texts"]), want_text, where)
            self.assertIsNotNone(r["usage"], where + ": include_usage")
            self.assertEqual(r["usage"]["completion_tokens"], MAX_TOKENS, where)
            self.assertEqual(r["usage"]["prompt_tokens"], want_prompt_tokens, where)
            # One event per token at most (tokens with incomplete UTF-8 ride along), plus the final one.
            self.assertLessEqual(len(r["texts"]), MAX_TOKENS + 1, where)

        for k, r in enumerate(wire_results):
            prompt = PROMPTS[k % len(PROMPTS)]
            where = "wire stream %d (%r)" % (k, prompt)
            self.assertNotIsInstance(r, Exception, where)
            text, fin = r
            self.assertEqual(fin["reason"], "length", where)
            self.assertEqual(text, reference[prompt][0], where)
            self.assertEqual(fin["usage"]["completion_tokens"], MAX_TOKENS, where)
            self.assertEqual(fin["usage"]["prompt_tokens"], reference[prompt][1], where)

        # Every request ended and released its blocks (sessions report their
        # end before the scheduler frees them: poll briefly).
        monitor = self.client()
        last = {}

        def idle():
            last.update(monitor.stats())
            return (last["running"], last["waiting"], last["kv_blocks_used"]) == (0, 0, 0)
        try:
            support.wait_until(idle, 5.0, what="running, waiting and kv_blocks_used to be 0")
        except AssertionError as e:
            self.fail("%s; last stats: %s" % (e, last))
        st = last
        self.assertEqual(st["requests_finished"].get("length"), len(PROMPTS) + N_HTTP + N_WIRE, st)


if __name__ == "__main__":
    unittest.main()
