"""Request and connection lifecycle against a real cortexd: cancel, deadline,
ping / health / models / stats, a client vanishing mid-stream, 64 concurrent
streaming clients, and admission limits (429)."""

import threading
import time
import unittest

from tests.e2e import support

LONG = 2000  # tokens: long enough to be mid-stream when the test acts (ctx 2048)


class ReplyTest(support.ServerTestCase):
    def test_ping_echoes_nonce(self):
        c = self.client()
        for nonce in (1, "abc", 2 ** 40):
            pong = c.ping(nonce=nonce)
            self.assertEqual(pong["nonce"], nonce)
            self.assertIsInstance(pong["server_time_ms"], int)
            self.assertGreater(pong["server_time_ms"], 0)

    def test_health_ready(self):
        h = self.client().health()
        self.assertEqual(h["status"], "ready")
        self.assertIs(h["model_loaded"], True)

    def test_models_list(self):
        models = self.client().models()
        self.assertEqual(len(models), 1)
        m = models[0]
        for k in ("name", "arch", "n_ctx", "n_vocab", "quant", "n_params"):
            self.assertIn(k, m)
        self.assertEqual(m["arch"], "llama")
        self.assertEqual(m["n_vocab"], 512)
        self.assertGreater(m["n_ctx"], 0)
        self.assertGreater(m["n_params"], 200000)
        self.assertLess(m["n_params"], 400000)

    def test_stats_fields_and_counters(self):
        c = self.client()
        before = c.stats()
        for k in ("running", "waiting", "kv_blocks_used", "kv_blocks_total", "prefix_cache_hit_rate",
                  "tokens_generated", "tokens_prefilled", "requests_finished", "preemptions",
                  "malformed_messages", "step_batch_tokens_mean", "ttft_ms", "itl_ms", "uptime_s", "kernel_isa"):
            self.assertIn(k, before)
        for k in ("ttft_ms", "itl_ms"):
            for p in ("p50", "p90", "p99"):
                self.assertIn(p, before[k], k)
        self.assertIsInstance(before["requests_finished"], dict)
        self.assertGreater(before["kv_blocks_total"], 0)
        _, fin = c.complete(prompt="Once upon a time", max_tokens=20, temperature=0)
        after = c.stats()
        self.assertGreaterEqual(after["tokens_generated"] - before["tokens_generated"], 20)
        self.assertGreaterEqual(after["tokens_prefilled"] - before["tokens_prefilled"],
                                fin["usage"]["prompt_tokens"] - fin["usage"]["cached_tokens"])
        self.assertEqual(after["requests_finished"].get("length", 0) - before["requests_finished"].get("length", 0), 1)
        self.assertGreaterEqual(after["uptime_s"], before["uptime_s"])

    def test_tags_echoed_and_finished_fields(self):
        s = self.client().submit(prompt="Once upon a time", max_tokens=8, temperature=0, tags={"user": "u1", "k": ""})
        text, fin = s.result()
        self.assertEqual(s.accepted["tags"], {"user": "u1", "k": ""})
        self.assertEqual(fin["tags"], {"user": "u1", "k": ""})
        for k in ("rid", "prompt_tokens", "cached_tokens", "queue_pos", "ignored"):
            self.assertIn(k, s.accepted)
        for k in ("queue_ms", "prefill_ms", "ttft_ms", "decode_ms", "total_ms", "tokens_per_s"):
            self.assertIn(k, fin["timings"])
        self.assertIn("preemptions", fin)
        self.assertEqual(fin["usage"]["completion_tokens"], 8)

    def test_stop_string_reports_kind_and_value(self):
        golden = support.golden_cases()[0]  # ", there was a little girl named Lily. ..."
        text, fin = self.client().complete(prompt=golden["prompt"], max_tokens=128, temperature=0, stop=["Lily"])
        self.assertEqual(fin["reason"], "stop")
        self.assertEqual(fin["stop"], {"kind": "string", "value": "Lily"})
        self.assertEqual(text, golden["text"][:golden["text"].index("Lily")])

    def long_stream(self, c, **kw):
        s = c.submit(prompt="Once upon a time", max_tokens=LONG, ignore_eos=True, temperature=0, **kw)
        self.assertEqual(next(s)["t"], "accepted")
        self.assertEqual(next(s)["t"], "chunk")  # running: in decode
        return s

    def assert_quiet(self, c):
        """Nothing more arrives for ended requests: a ping round trip sees no stray message."""
        c.ping(nonce=1)
        self.assertEqual(c.pending(), [])

    def test_cancel_by_id_is_acknowledged_by_finished_cancelled(self):
        c = self.client()
        s = self.long_stream(c)
        s.cancel()
        text, fin = s.result()
        self.assertEqual(fin["reason"], "cancelled")
        self.assertLess(fin["usage"]["completion_tokens"], LONG)
        c.cancel(s.id)  # idempotent: no second finished, no error
        self.assert_quiet(c)

    def test_cancel_by_ids_ignores_unknown_ids(self):
        c = self.client()
        s1, s2 = self.long_stream(c), self.long_stream(c)
        c.cancel([s1.id, "no-such-id", s2.id])
        for s in (s1, s2):
            self.assertEqual(s.result()[1]["reason"], "cancelled")
        c.cancel("never-submitted")
        self.assert_quiet(c)

    def test_cancel_of_another_connections_id_does_nothing(self):
        a, b = self.client(), self.client()
        s = self.long_stream(a)
        b.cancel(s.id)
        self.assert_quiet(b)
        text, fin = s.result()
        self.assertEqual(fin["reason"], "length")

    def test_deadline(self):
        s = self.client().submit(prompt="Once upon a time", max_tokens=LONG, ignore_eos=True, temperature=0,
                                 deadline_ms=30)
        text, fin = s.result()
        self.assertEqual(fin["reason"], "deadline")
        self.assertLess(fin["usage"]["completion_tokens"], LONG)

    def test_client_gone_mid_stream_frees_its_blocks_within_a_second(self):
        watcher = self.client()
        support.wait_until(lambda: watcher.stats()["running"] == 0, 10, what="an idle server")
        before = watcher.stats()
        gone = self.client()
        streams = [self.long_stream(gone) for _ in range(8)]
        mid = watcher.stats()
        self.assertEqual(mid["running"] + mid["waiting"], 8)
        self.assertGreater(mid["kv_blocks_used"], 0)
        gone.close()
        t0 = time.monotonic()
        support.wait_until(lambda: (lambda st: st["running"] == 0 and st["waiting"] == 0
                                    and st["kv_blocks_used"] == 0)(watcher.stats()),
                           1.0, interval_s=0.005, what="running 0 and kv_blocks_used 0 after the client left")
        elapsed = time.monotonic() - t0
        after = watcher.stats()
        generated = after["tokens_generated"] - before["tokens_generated"]
        self.assertLess(generated, 8 * LONG / 2, "the requests were cut short, not run to the end")
        ended = sum(after["requests_finished"].get(r, 0) - before["requests_finished"].get(r, 0)
                    for r in ("client_gone", "cancelled"))
        self.assertEqual(ended, 8, after["requests_finished"])
        self.assertLessEqual(elapsed, 1.0)
        del streams

    def test_64_concurrent_streaming_clients(self):
        prompts = [c["prompt"] for c in support.golden_cases() if c["prompt"]] + [
            "Tim had a red car", "The sun was hot", "Sue found a cat", "A bird sang"]
        modes = [{"temperature": 0}, {"temperature": 0.9, "seed": 1234, "top_k": 40}]
        n_tokens = 96
        jobs = [(prompts[i % len(prompts)], modes[(i // len(prompts)) % 2]) for i in range(64)]
        ref_client = self.client(60)
        alone = {}
        for p, mode in jobs:
            key = (p, tuple(sorted(mode.items())))
            if key not in alone:
                alone[key] = ref_client.complete(prompt=p, max_tokens=n_tokens, **mode)[0]
        # greedy alone agrees with llama.cpp where the prompt is a golden one
        for g in support.golden_cases():
            if g["prompt"]:
                self.assertTrue(g["text"].startswith(alone[(g["prompt"], (("temperature", 0),))]))

        clients = [self.client(120) for _ in jobs]
        results = [None] * len(jobs)
        errors = []
        barrier = threading.Barrier(len(jobs))

        def run(i):
            try:
                c = clients[i]
                p, mode = jobs[i]
                c.ping()  # connected before the barrier
                barrier.wait(30)
                s = c.submit(prompt=p, max_tokens=n_tokens, **mode)
                events = list(s)
                c.ping()  # anything after the terminal message would arrive before the pong
                results[i] = (events, c.pending())
            except BaseException as e:  # noqa: B902 (reported below)
                errors.append((i, repr(e)))

        threads = [threading.Thread(target=run, args=(i,)) for i in range(len(jobs))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(180)
        self.assertEqual(errors, [])
        for i, (p, mode) in enumerate(jobs):
            with self.subTest(client=i):
                events, stray = results[i]
                self.assertEqual(events[0]["t"], "accepted")
                self.assertEqual([e["seq"] for e in events], list(range(len(events))), "contiguous seq from 0")
                self.assertTrue(all(e["t"] == "chunk" for e in events[1:-1]))
                self.assertIn(events[-1]["t"], ("finished",))
                self.assertEqual(stray, [], "exactly one terminal message, nothing after it")
                text = "".join(e.get("text", "") for e in events[1:])
                self.assertEqual(text, alone[(p, tuple(sorted(mode.items())))])


class AdmissionTest(support.ServerTestCase):
    SERVER_ARGS = ("--max-running", "1", "--max-waiting", "1")

    def test_queue_full_is_429_overloaded_and_retryable(self):
        c = self.client()
        streams = [c.submit(prompt="Once upon a time", max_tokens=LONG, ignore_eos=True, temperature=0)
                   for _ in range(5)]
        firsts = [next(s) for s in streams]
        accepted = [s for s, f in zip(streams, firsts) if f["t"] == "accepted"]
        rejected = [f for f in firsts if f["t"] == "error"]
        self.assertGreaterEqual(len(accepted), 1)
        self.assertLessEqual(len(accepted), 2, "max-running 1 + max-waiting 1")
        self.assertEqual(len(accepted) + len(rejected), 5)
        for e in rejected:
            self.assertEqual((e["code"], e["name"], e["retryable"]), (429, "overloaded", True))
            self.assertIsInstance(e["retry_after_ms"], int)
        c.cancel([s.id for s in accepted])
        for s in accepted:
            self.assertIn(s.result()[1]["reason"], ("cancelled",))
        text, fin = c.complete(prompt="Once upon a time", max_tokens=4, temperature=0)
        self.assertEqual(fin["reason"], "length")


if __name__ == "__main__":
    unittest.main()
