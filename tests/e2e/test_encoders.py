"""Encoders served by a real cortexd (tests/data/encoder: tiny random-weight
bert files and what llama.cpp's llama-server computes on them).

Over the ZeroMQ wire: `embed` (by text and by token ids) gives the golden
embeddings within 1e-4, `rerank` the golden /v1/rerank scores; each request
gets `accepted` and exactly one terminal message; a generation submit, an
embed on a reranker, a rerank on an embedder and bad fields end with a
terminal error that says what to fix. Over HTTP: POST /v1/rerank (and
/rerank) gives the golden scores in the golden order, top_n cuts them, and
bad fields are 400 naming the field."""

import json
import os
import unittest

from tests.e2e import http_support
from tests.e2e.support import REPO_DIR, Cortexd, ServerTestCase

DATA_DIR = os.path.join(REPO_DIR, "tests", "data", "encoder")
ATOL = 1e-4


def golden(name):
    with open(os.path.join(DATA_DIR, name)) as f:
        return json.load(f)


class EncoderServerCase(ServerTestCase):
    """One cortexd per class on its MODEL (tests/data/encoder)."""
    MODEL = None

    @classmethod
    def setUpClass(cls):
        cls.server = Cortexd("--max-batch-tokens", "512", model=os.path.join(DATA_DIR, cls.MODEL)).start()

    def run_all(self, messages):
        """Sends every message on one connection (pipelined) and returns
        {id: [events]} once each request has had its terminal message, and
        checks that exactly one terminal message came per request."""
        c = self.server.client(timeout_s=60)
        streams = {}
        for m in messages:
            c.send(dict(m, v=1))
            streams[m["id"]] = c.track(m["id"])
        events = {rid: list(s) for rid, s in streams.items()}
        for rid, evs in events.items():
            terminal = [e for e in evs if e["t"] == "finished" or (e["t"] == "error" and e.get("terminal"))]
            self.assertEqual(len(terminal), 1, (rid, evs))
            self.assertIs(evs[-1], terminal[0], rid)
        return events

    def assert_refused(self, evs, code, says):
        self.assertEqual([e["t"] for e in evs], ["error"], evs)
        self.assertEqual(evs[0]["code"], code, evs[0])
        self.assertTrue(evs[0]["terminal"])
        self.assertIn(says, evs[0]["message"])


class WireEmbedTest(EncoderServerCase):
    MODEL = "tiny-bert-f32.gguf"

    def test_embed_matches_llama_server_by_text_and_by_ids(self):
        g = golden("tiny-bert-f32.json")
        msgs, index = [], {}
        for i, inp in enumerate(g["inputs"]):
            msgs.append({"t": "embed", "id": "ids%d" % i, "tokens": inp["ids"]})
            index["ids%d" % i] = i
            if "text" in inp:
                msgs.append({"t": "embed", "id": "text%d" % i, "prompt": inp["text"], "tags": {"i": str(i)}})
                index["text%d" % i] = i
        events = self.run_all(msgs)
        lengths = set()
        for m in msgs:
            i = index[m["id"]]
            evs = events[m["id"]]
            with self.subTest(id=m["id"]):
                self.assertEqual([e["t"] for e in evs], ["accepted", "finished"])
                fin = evs[-1]
                self.assertEqual(fin["reason"], "stop")
                self.assertNotIn("stop", fin)
                self.assertEqual(fin["usage"]["prompt_tokens"], len(g["inputs"][i]["ids"]))
                self.assertEqual(fin["tags"], m.get("tags", {}))
                ref = g["embeddings"]["mean"][i]
                self.assertEqual(len(fin["embedding"]), len(ref))
                self.assertLessEqual(max(abs(a - b) for a, b in zip(fin["embedding"], ref)), ATOL)
                lengths.add(len(g["inputs"][i]["ids"]))
        self.assertTrue({1, 7, 500} <= lengths, lengths)

    def test_what_an_embedder_refuses(self):
        events = self.run_all([
            {"t": "submit", "id": "gen", "prompt": "Hello", "params": {"max_tokens": 4}},
            {"t": "rerank", "id": "rr", "query": "q", "document": "d"},
            {"t": "embed", "id": "none"},
            {"t": "embed", "id": "vocab", "tokens": [101, 99999]},
            {"t": "embed", "id": "long", "tokens": [1000] * 513},
            {"t": "embed", "id": "model", "prompt": "x", "model": "no-such-model"},
        ])
        self.assert_refused(events["gen"], 400, "only embeds")
        self.assert_refused(events["rr"], 400, "not a reranker")
        self.assert_refused(events["none"], 400, "embed needs prompt")
        self.assert_refused(events["vocab"], 400, "tokens[1]")
        self.assert_refused(events["long"], 422, "513 tokens")
        self.assert_refused(events["model"], 404, "no-such-model")


class RerankTest(EncoderServerCase):
    MODEL = "tiny-bert-rerank-f32.gguf"

    def test_wire_rerank_matches_llama_server(self):
        g = golden("tiny-bert-rerank-f32.json")
        msgs = [{"t": "rerank", "id": "doc%d" % d, "query": g["query"], "document": doc}
                for d, doc in enumerate(g["documents"])]
        events = self.run_all(msgs + [{"t": "embed", "id": "plain", "prompt": "an embedding, please"},
                                      {"t": "rerank", "id": "empty", "query": "", "document": "d"}])
        scores = {}
        for d in range(len(g["documents"])):
            evs = events["doc%d" % d]
            self.assertEqual([e["t"] for e in evs], ["accepted", "finished"], evs)
            self.assertNotIn("embedding", evs[-1])
            scores[d] = evs[-1]["score"]
            self.assertEqual(evs[-1]["usage"]["prompt_tokens"], 2 + len(g["query_ids"]) + len(g["document_ids"][d]))
        for res in g["results_all"]:
            self.assertAlmostEqual(scores[res["index"]], res["relevance_score"], delta=ATOL)
        order = sorted(scores, key=lambda d: -scores[d])
        self.assertEqual(order, [r["index"] for r in g["results_all"]])
        self.assert_refused(events["plain"], 400, "reranker")
        self.assert_refused(events["empty"], 400, "query is an empty string")

    def test_http_rerank_matches_llama_server(self):
        g = golden("tiny-bert-rerank-f32.json")
        for path, top_n, want in (("/v1/rerank", None, g["results_all"]), ("/rerank", g["top_n"], g["results"])):
            body = {"query": g["query"], "documents": g["documents"]}
            if top_n is not None:
                body["top_n"] = top_n
            with self.subTest(path=path, top_n=top_n):
                status, out = http_support.post_json(self.server.http, path, body)
                self.assertEqual(status, 200, out)
                self.assertEqual([r["index"] for r in out["results"]], [r["index"] for r in want])
                for got, ref in zip(out["results"], want):
                    self.assertAlmostEqual(got["relevance_score"], ref["relevance_score"], delta=ATOL)
                n_tokens = sum(2 + len(g["query_ids"]) + len(ids) for ids in g["document_ids"])
                self.assertEqual(out["usage"]["prompt_tokens"], n_tokens)

    def test_http_rerank_errors_name_the_field(self):
        base = self.server.http
        for body, param in (({"documents": ["a"]}, "query"),
                            ({"query": "q"}, "documents"),
                            ({"query": "q", "documents": []}, "documents"),
                            ({"query": "q", "documents": ["a", 3]}, "documents[1]"),
                            ({"query": "q", "documents": ["a", ""]}, "documents[1]"),
                            ({"query": "q", "documents": ["a"], "top_n": 0}, "top_n")):
            with self.subTest(body=body):
                status, out = http_support.post_json(base, "/v1/rerank", body)
                self.assertEqual(status, 400, out)
                self.assertEqual(out["error"]["param"], param, out)
        status, out = http_support.post_json(base, "/v1/embeddings", {"input": "an embedding, please"})
        self.assertEqual(status, 400, out)
        self.assertIn("/v1/rerank", out["error"]["message"])


if __name__ == "__main__":
    unittest.main()
