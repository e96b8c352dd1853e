"""GET /metrics of a real cortexd parses with a real Prometheus parser
(Debian's python3-prometheus-client), holds every metric of http.md with its
type, and after a mix of requests over both gateways (ended by length, stop,
cancel, a client that hung up, rejections, malformed input) its counters
agree with the wire `stats`."""

import math
import unittest

from tests.e2e import http_support, support

# http.md "Metrics": exposition name -> type. prometheus_client names a
# counter family without its `_total`.
COUNTERS = ["cortex_requests_total", "cortex_prompt_tokens_total", "cortex_generation_tokens_total",
            "cortex_prefix_cache_hit_tokens_total", "cortex_preemptions_total", "cortex_malformed_messages_total",
            "cortex_rejections_total",
            # issue 13: speculative decoding (an extension beyond http.md)
            "cortex_spec_drafted_tokens_total", "cortex_spec_accepted_tokens_total"]
GAUGES = ["cortex_requests_running", "cortex_requests_waiting", "cortex_kv_blocks_used", "cortex_kv_blocks_total",
          "cortex_kv_bytes_per_token", "cortex_connections", "cortex_model_loaded",
          # K/V memory kinds (an extension beyond http.md): bytes held, without window release, in the arena; per group
          "cortex_kv_bytes_used", "cortex_kv_bytes_full", "cortex_kv_bytes_total",
          "cortex_kv_group_blocks_used", "cortex_kv_group_blocks_released",
          # AMX (issue 28, an extension beyond http.md): the kernels' path as a label
          "cortex_kernel_isa_info"]
HISTOGRAMS = ["cortex_time_to_first_token_seconds", "cortex_inter_token_latency_seconds",
              "cortex_request_duration_seconds", "cortex_queue_time_seconds", "cortex_step_duration_seconds",
              "cortex_step_batch_tokens"]
MESSAGES = [{"role": "user", "content": "Once upon a time"}]


def family_name(name):
    return name[:-len("_total")] if name in COUNTERS else name


class HttpMetricsTest(support.ServerTestCase):
    # Every draft verified (no governor), so the speculative counters move whatever the step timings.
    SERVER_ARGS = ("--speculative-adaptive", "off")

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.n_ctx = cls.server.client().models()[0]["n_ctx"]
        cls.workload()
        c = cls.server.client()
        support.wait_until(lambda: (lambda s: s["running"] == 0 and s["waiting"] == 0)(c.stats()), 10,
                           what="every request ended")
        cls.stats = c.stats()
        cls.content_type, cls.families = http_support.metrics(cls.server.http)

    @classmethod
    def workload(cls):
        """Requests over both gateways, ending every way a request can end here."""
        base = cls.server.http
        c = cls.server.client()
        # ZeroMQ: length, stop (a stop token: the third greedy token of the
        # golden case; stop strings are test_stop_string's), cancelled, a 422
        # rejection, a malformed frame.
        c.complete(prompt="Once upon a time", max_tokens=16, temperature=0)
        c.complete(messages=MESSAGES, max_tokens=24, temperature=0)
        _, fin = c.complete(tokens=support.golden_cases()[0]["tokens"], max_tokens=16, temperature=0,
                            stop_token_ids=[support.golden_token_ids(0)[2]])
        assert fin["reason"] == "stop" and fin["usage"]["completion_tokens"] == 3, fin
        s = c.submit(prompt="Once upon a time", max_tokens=cls.n_ctx - 8, temperature=0, ignore_eos=True)
        for ev in s:
            if ev["t"] == "chunk":
                s.cancel()
                break
        s.result()
        try:
            c.complete(tokens=[300] * (cls.n_ctx + 4), max_tokens=1)
        except support.cortexstream.CortexError:
            pass
        c.send(b"\xc1 not msgpack")
        c.recv(5.0)
        # HTTP: chat (non-stream, n=2, stream), completions, embeddings, a 422, a 400, malformed JSON,
        # and a stream whose client hangs up (client_gone).
        post = http_support.post_json
        assert post(base, "/v1/chat/completions", {"messages": MESSAGES, "max_tokens": 8, "temperature": 0})[0] == 200
        assert post(base, "/v1/chat/completions", {"messages": MESSAGES, "max_tokens": 8, "n": 2})[0] == 200
        assert http_support.request(base, "POST", "/v1/chat/completions",
                                    {"messages": MESSAGES, "max_tokens": 8, "stream": True})[0] == 200
        assert post(base, "/v1/completions", {"prompt": "Lily", "max_tokens": 12, "temperature": 0})[0] == 200
        # Speculative decoding (extension field): a story repeats its 1-grams, so drafts are made and some accepted.
        assert post(base, "/v1/completions", {"prompt": "Once upon a time", "max_tokens": 100, "temperature": 0,
                                              "speculative": {"ngram": 1, "max_draft": 8}})[0] == 200
        assert post(base, "/v1/embeddings", {"input": ["a cat", "a dog"]})[0] == 200
        assert post(base, "/v1/completions", {"prompt": [300] * (cls.n_ctx + 4), "max_tokens": 1})[0] == 400
        assert post(base, "/v1/completions", {"prompt": "x", "max_tokens": -1})[0] == 400
        assert http_support.request(base, "POST", "/v1/completions", b'{"prompt": ',
                                    {"Content-Type": "application/json"})[0] == 400
        http_support.hang_up_mid_request(base, "/v1/completions",
                                         {"prompt": "Once", "max_tokens": cls.n_ctx - 8, "ignore_eos": True,
                                          "stream": True}, read_bytes=600)

    def test_speculative_counters_move(self):
        drafted = self.families[family_name("cortex_spec_drafted_tokens_total")].samples[0].value
        accepted = self.families[family_name("cortex_spec_accepted_tokens_total")].samples[0].value
        self.assertGreater(drafted, 0)
        self.assertGreater(accepted, 0)
        self.assertLessEqual(accepted, drafted)

    def test_content_type_is_prometheus_text_0_0_4(self):
        self.assertTrue(self.content_type.startswith("text/plain"), self.content_type)
        self.assertIn("version=0.0.4", self.content_type)

    def test_every_metric_of_http_md_with_its_type(self):
        for names, kind in ((COUNTERS, "counter"), (GAUGES, "gauge"), (HISTOGRAMS, "histogram")):
            for name in names:
                with self.subTest(name):
                    f = self.families.get(family_name(name))
                    self.assertIsNotNone(f, "%s is missing from /metrics" % name)
                    self.assertEqual(f.type, kind)
        self.assertEqual(sorted(f.name for f in self.families.values() if f.name.startswith("cortex_")),
                         sorted(family_name(n) for n in COUNTERS + GAUGES + HISTOGRAMS), "no other cortex_ metric")

    def test_histograms_are_consistent(self):
        for name in HISTOGRAMS:
            with self.subTest(name):
                samples = self.families[name].samples
                buckets = [(float(s.labels["le"]), s.value) for s in samples if s.name == name + "_bucket"]
                self.assertTrue(buckets, "buckets")
                self.assertEqual([b[0] for b in buckets], sorted(b[0] for b in buckets))
                self.assertEqual(buckets[-1][0], math.inf, "the last bucket is +Inf")
                values = [b[1] for b in buckets]
                self.assertEqual(values, sorted(values), "buckets are cumulative")
                count = http_support.sample_sum(self.families, name, name + "_count")
                self.assertEqual(buckets[-1][1], count, "+Inf bucket == _count")
                self.assertGreaterEqual(http_support.sample_sum(self.families, name, name + "_sum"), 0)

    def requests_total(self, **labels):
        return http_support.sample_sum(self.families, "cortex_requests", "cortex_requests_total", **labels)

    def test_requests_by_reason_agree_with_stats(self):
        finished = self.stats["requests_finished"]
        for reason in ("length", "stop", "cancelled", "client_gone"):
            self.assertGreater(finished.get(reason, 0), 0, "the workload ended a request with %s" % reason)
        for reason, n in finished.items():
            with self.subTest(reason):
                self.assertEqual(self.requests_total(reason=reason), n, "requests_total{reason=%s}" % reason)
        reasons = {s.labels["reason"] for s in self.families["cortex_requests"].samples}
        self.assertLessEqual(reasons - set(finished), {"rejected"}, "reasons are protocol v1's (or rejected)")
        for endpoint in ("wire", "chat_completions", "completions", "embeddings"):
            self.assertGreater(self.requests_total(endpoint=endpoint), 0, endpoint)
        self.assertEqual(self.requests_total(endpoint="completions", reason="client_gone"), 1,
                         "the HTTP client that hung up")
        self.assertEqual(self.requests_total(endpoint="wire", reason="cancelled"), 1)
        self.assertEqual(self.requests_total(reason="rejected"), 2, "the two 422s (both gateways)")

    def test_token_counters_agree_with_stats(self):
        s = self.stats
        get = lambda fam: http_support.sample_sum(self.families, fam)  # noqa: E731
        self.assertEqual(get("cortex_generation_tokens"), s["tokens_generated"])
        self.assertEqual(get("cortex_preemptions"), s["preemptions"])
        # Every prompt token was either computed or served from the prefix cache.
        self.assertEqual(get("cortex_prompt_tokens") - get("cortex_prefix_cache_hit_tokens"), s["tokens_prefilled"])
        self.assertGreater(get("cortex_prefix_cache_hit_tokens"), 0, "repeated prompts hit the prefix cache")

    def test_rejections_and_malformed(self):
        rej = lambda code: http_support.sample_sum(self.families, "cortex_rejections", code=code)  # noqa: E731
        self.assertEqual(rej("context_overflow"), 2)
        self.assertEqual(rej("invalid_param"), 1)
        self.assertEqual(rej("malformed"), 2)
        mal = lambda gw: http_support.sample_sum(self.families, "cortex_malformed_messages", gateway=gw)  # noqa: E731
        self.assertEqual(mal("zmq"), 1)
        self.assertEqual(mal("http"), 1)
        self.assertEqual(mal("zmq"), self.stats["malformed_messages"], "stats counts the wire's")

    def test_gauges_agree_with_stats(self):
        g = lambda fam, **kw: http_support.sample_sum(self.families, fam, **kw)  # noqa: E731
        self.assertEqual(g("cortex_kv_blocks_total"), self.stats["kv_blocks_total"])
        self.assertEqual(g("cortex_kv_bytes_per_token"), self.stats["kv_bytes_per_token"])
        # stories260K, f32 (support.Cortexd's default for golden tests): 5 layers x (K, V) x 4 KV heads x 8 x 4 bytes.
        self.assertEqual(self.stats["kv_bytes_per_token"], 1280)
        self.assertEqual(g("cortex_kv_blocks_used"), 0)
        # Memory kinds: stories260K has no windowed layer, so one full-attention group of its 5 layers,
        # whose blocks are the pool's (1280 bytes a token, 16 tokens a block).
        self.assertEqual(self.stats["kv_groups"], [{"window": 0, "layers": 5, "blocks_used": 0, "blocks_released": 0}])
        self.assertEqual(self.stats["kv_bytes_total"], self.stats["kv_blocks_total"] * 1280 * 16)
        self.assertEqual(g("cortex_kv_bytes_total"), self.stats["kv_bytes_total"])
        self.assertEqual(g("cortex_kv_bytes_used"), 0)
        self.assertEqual(g("cortex_kv_bytes_full"), 0)
        self.assertIn(self.stats["kernel_isa"], ("scalar", "avx2", "avx512", "amx"))
        self.assertEqual(g("cortex_kernel_isa_info", isa=self.stats["kernel_isa"]), 1)
        self.assertEqual(g("cortex_kv_group_blocks_used", group="0", window="0"), 0)
        self.assertEqual(g("cortex_kv_group_blocks_released", group="0", window="0"), 0)
        self.assertEqual(g("cortex_requests_running"), 0)
        self.assertEqual(g("cortex_requests_waiting"), 0)
        self.assertEqual(g("cortex_model_loaded"), 1)
        self.assertGreaterEqual(g("cortex_connections", gateway="http"), 1, "the /metrics request's own")
        self.assertGreaterEqual(g("cortex_connections", gateway="zmq"), 1, "the wire client that asked for stats")

    def test_latency_histograms_count_the_requests(self):
        count = lambda name: http_support.sample_sum(self.families, name, name + "_count")  # noqa: E731
        ended = sum(self.stats["requests_finished"].values())
        self.assertEqual(count("cortex_request_duration_seconds"), ended)
        self.assertEqual(count("cortex_queue_time_seconds"), ended)
        with_tokens = ended - self.requests_total(endpoint="embeddings")
        self.assertEqual(count("cortex_time_to_first_token_seconds"), with_tokens)
        self.assertEqual(count("cortex_inter_token_latency_seconds"),
                         self.stats["tokens_generated"] - with_tokens, "one gap per token after the first")

    def test_stop_string_tokens(self):
        """A stop string is matched (by the session) after the engine sampled
        the token; the request's usage (and /metrics) counts the tokens up to
        the stop, while `stats` also counts those the engine computed until
        the finish reached it (1 when idle, 15 seen under load): the only way
        the two may differ."""
        c = self.client()
        text, _ = c.complete(messages=MESSAGES, max_tokens=24, temperature=0)
        support.wait_until(lambda: c.stats()["running"] == 0, 5, what="idle")
        before, (_, m0) = c.stats(), http_support.metrics(self.server.http)
        _, fin = c.complete(messages=MESSAGES, max_tokens=24, temperature=0, stop=[text[6:10]])
        self.assertEqual(fin["reason"], "stop")
        support.wait_until(lambda: c.stats()["running"] == 0, 5, what="idle")
        after, (_, m1) = c.stats(), http_support.metrics(self.server.http)
        gen = lambda m: http_support.sample_sum(m, "cortex_generation_tokens")  # noqa: E731
        self.assertEqual(gen(m1) - gen(m0), fin["usage"]["completion_tokens"])
        overshoot = (after["tokens_generated"] - before["tokens_generated"]) - fin["usage"]["completion_tokens"]
        self.assertGreaterEqual(overshoot, 0, "stats counts every token the engine sampled")
        self.assertLessEqual(fin["usage"]["completion_tokens"] + overshoot, 24, "within max_tokens")
        print("tokens sampled after the stop string matched: %d" % overshoot)
        self.assertEqual(self.stop_reason(m1) - self.stop_reason(m0),
                         after["requests_finished"]["stop"] - before["requests_finished"]["stop"])

    def stop_reason(self, families):
        return http_support.sample_sum(families, "cortex_requests", "cortex_requests_total", reason="stop")

    def test_step_histograms_count_engine_steps(self):
        count = lambda name: http_support.sample_sum(self.families, name, name + "_count")  # noqa: E731
        self.assertGreater(count("cortex_step_duration_seconds"), 0)
        self.assertEqual(count("cortex_step_batch_tokens"), count("cortex_step_duration_seconds"))
        # A step computes prompt tokens (prefill) and fed-back sampled tokens
        # (decode), and speculative drafts: at least the prefilled ones, at most
        # every token either way plus every draft (rejected ones included).
        batch_sum = http_support.sample_sum(self.families, "cortex_step_batch_tokens", "cortex_step_batch_tokens_sum")
        self.assertGreaterEqual(batch_sum, self.stats["tokens_prefilled"])
        self.assertLessEqual(batch_sum, self.stats["tokens_generated"] + self.stats["tokens_prefilled"] +
                             self.stats["spec_drafted_tokens"])
        # The mean agrees with the engine's own figure.
        self.assertAlmostEqual(batch_sum / count("cortex_step_batch_tokens"), self.stats["step_batch_tokens_mean"], places=3)
