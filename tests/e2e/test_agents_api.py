"""The agents' APIs end to end (issue 27 items 5 and 6; http.md "Responses
API" and "Anthropic Messages API"): cortexd on stories260K with the Qwen3
template, driven by the official clients (tests/e2e/node/agents_api_test.mjs:
the `openai` SDK's responses.create / .stream, `@anthropic-ai/sdk`'s
messages.create / .stream / countTokens, an `@openai/agents` run), every
forced call's arguments and every json_schema answer validated here with
python3-jsonschema; then over raw HTTP what the SDKs hide: the exact SSE
framing, count_tokens against usage, Anthropic-shaped errors, a client that
disconnects, and `x-api-key` beside Bearer under --auth."""

import http.client
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import unittest
import urllib.parse

import jsonschema

from tests.e2e import auth_support as A
from tests.e2e import support

NODE_DIR = os.path.join(support.REPO_DIR, "tests", "e2e", "node")
NODE_TEST = os.path.join(NODE_DIR, "agents_api_test.mjs")
QWEN3 = os.path.join(support.SHARED_DIR, "golden", "chat", "templates", "qwen3.jinja")

TOOL = {"name": "get_weather", "description": "The weather in a city for some days",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "maxLength": 12},
            "days": {"type": "integer", "minimum": 1, "maximum": 7}},
            "required": ["city", "days"], "additionalProperties": False}}
FORMAT_SCHEMA = {"type": "object", "properties": {
    "city": {"type": "string", "maxLength": 10},
    "temperature": {"type": "integer", "minimum": -30, "maximum": 45},
    "sky": {"enum": ["sunny", "cloudy", "rain"]}},
    "required": ["city", "temperature", "sky"], "additionalProperties": False}
# stories260K writes no <think> of its own: a grammar makes it write one, which the Qwen3 parser splits off.
THINK_GRAMMAR = 'root ::= "<think>" [a-z ]{3,20} "</think>" "\\n\\n" [a-z ]{3,20}'
QUESTION = "Once upon a time, what was the weather in Paris?"


def check_call(test, call, where):
    test.assertEqual(call["name"], TOOL["name"], where)
    jsonschema.validate(json.loads(call["arguments"]), TOOL["parameters"], format_checker=jsonschema.FormatChecker())


def post(server, path, body, headers=None, timeout_s=60):
    status, hdrs, raw = A.http_call(server.http, "POST", path, body, headers=headers, timeout_s=timeout_s)
    return status, hdrs, raw


def named_events(raw):
    """[(event name, data)] of a named-event stream; every event has both lines."""
    out = []
    for block in raw.decode().split("\n\n"):
        if not block:
            continue
        lines = block.split("\n")
        assert len(lines) == 2 and lines[0].startswith("event: ") and lines[1].startswith("data: "), block
        out.append((lines[0][7:], json.loads(lines[1][6:])))
    return out


@support.needs_reference_data  # Qwen3's chat template
class AgentsApiTest(support.ServerTestCase):
    SERVER_ARGS = ("--chat-template", QWEN3)

    def test_official_clients(self):
        node = shutil.which("node")
        for pkg in ("openai", "@anthropic-ai/sdk", "@openai/agents"):
            if node is None or not os.path.isdir(os.path.join(NODE_DIR, "node_modules", pkg)):
                self.fail("node or %s is missing: run scripts/setup" % pkg)
        with tempfile.TemporaryDirectory() as d:
            spec, out = os.path.join(d, "spec.json"), os.path.join(d, "out.json")
            with open(spec, "w") as f:
                json.dump({"model": "stories260K", "tool": TOOL, "format_schema": FORMAT_SCHEMA,
                           "think_grammar": THINK_GRAMMAR}, f)
            env = dict(os.environ, CORTEX_OPENAI_BASE_URL=self.server.http + "/v1", CORTEX_AGENTS_SPEC=spec,
                       CORTEX_AGENTS_OUT=out)
            r = subprocess.run([node, "--test", "--test-reporter=spec", NODE_TEST], env=env, capture_output=True,
                               timeout=400)
            log = r.stdout.decode("utf-8", "replace") + r.stderr.decode("utf-8", "replace")
            print(log)
            self.assertEqual(r.returncode, 0, "node --test failed:\n%s\ncortexd log:\n%s" % (log, self.server.log()))
            with open(out) as f:
                res = json.load(f)
        check_call(self, res["responses_tool_round_trip"]["call"], "responses.create named")
        for call in res["responses_stream_required"]["calls"]:
            check_call(self, call, "responses.stream required")
        for text in res["responses_json_schema"]["texts"]:
            jsonschema.validate(json.loads(text), FORMAT_SCHEMA)
        check_call(self, res["messages_tool_round_trip"]["call"], "messages.create tool")
        for call in res["messages_stream_any"]["calls"]:
            check_call(self, call, "messages.stream any")
        check_call(self, res["agents_run"]["call"], "@openai/agents run")
        self.assertEqual(res["count_tokens"]["counted"], res["count_tokens"]["usage"])

    def test_responses_stream_framing(self):
        status, hdrs, raw = post(self.server, "/v1/responses", {
            "input": QUESTION, "stream": True, "max_output_tokens": 400, "temperature": 1, "seed": 9,
            "tools": [dict(TOOL, type="function")], "tool_choice": "required"})
        self.assertEqual(status, 200)
        self.assertTrue(hdrs["content-type"].startswith("text/event-stream"))
        evs = named_events(raw)
        for i, (name, data) in enumerate(evs):
            self.assertEqual(name, data["type"])
            self.assertEqual(data["sequence_number"], i)
        self.assertEqual([n for n, _ in evs[:3]], ["response.created", "response.in_progress", "response.output_item.added"])
        self.assertEqual(evs[-1][0], "response.completed")
        done = evs[-1][1]["response"]
        calls = [o for o in done["output"] if o["type"] == "function_call"]
        self.assertGreaterEqual(len(calls), 1)
        for c in calls:
            check_call(self, c, "raw responses stream")
        self.assertEqual(sum(1 for n, _ in evs if n in ("response.completed", "response.incomplete", "response.failed")), 1)

    def test_messages_stream_framing(self):
        status, hdrs, raw = post(self.server, "/v1/messages", {
            "model": "stories260K", "max_tokens": 400, "stream": True, "temperature": 1, "seed": 4,
            "messages": [{"role": "user", "content": QUESTION}],
            "tools": [{"name": TOOL["name"], "input_schema": TOOL["parameters"]}], "tool_choice": {"type": "any"}})
        self.assertEqual(status, 200)
        evs = named_events(raw)
        for name, data in evs:
            self.assertEqual(name, data["type"])
        names = [n for n, _ in evs]
        self.assertEqual(names[:2], ["message_start", "ping"])
        self.assertEqual(names[-2:], ["message_delta", "message_stop"])
        self.assertEqual(evs[-2][1]["delta"]["stop_reason"], "tool_use")
        args = {}  # by block: parallel calls are separate tool_use blocks
        for n, d in evs:
            if n == "content_block_delta" and d["delta"]["type"] == "input_json_delta":
                args[d["index"]] = args.get(d["index"], "") + d["delta"]["partial_json"]
        self.assertGreaterEqual(len(args), 1)
        for text in args.values():
            jsonschema.validate(json.loads(text), TOOL["parameters"])

    def test_count_tokens_equals_usage(self):
        bodies = [
            {"messages": [{"role": "user", "content": "Hi"}]},
            {"system": [{"type": "text", "text": "Be brief."}], "messages": [
                {"role": "user", "content": QUESTION},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather",
                                                   "input": {"city": "Paris", "days": 2}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"}]}],
             "tools": [{"name": TOOL["name"], "input_schema": TOOL["parameters"]}]},
        ]
        for body in bodies:
            status, _, raw = post(self.server, "/v1/messages/count_tokens", dict(body, model="stories260K"))
            self.assertEqual(status, 200, raw)
            counted = json.loads(raw)
            self.assertEqual(list(counted), ["input_tokens"])
            status, _, raw = post(self.server, "/v1/messages", dict(body, max_tokens=2, temperature=0))
            self.assertEqual(status, 200, raw)
            self.assertEqual(counted["input_tokens"], json.loads(raw)["usage"]["input_tokens"])

    def test_errors_name_what_to_fix(self):
        cases = [
            ("/v1/messages", b"{not json", 400, "invalid_request_error", "not valid JSON"),
            ("/v1/messages", {"messages": [{"role": "user", "content": "x"}]}, 400, "invalid_request_error", "max_tokens is required"),
            ("/v1/messages", {"max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "image", "source": {}}]}]},
             501, "api_error", "messages[0].content[0]"),
            ("/v1/messages/count_tokens", {"messages": "hi"}, 400, "invalid_request_error", "messages must be"),
            ("/v1/messages", {"max_tokens": 5, "messages": [{"role": "user", "content": "x " * 5000}]}, 400,
             "invalid_request_error", "context"),
        ]
        for path, body, status, etype, words in cases:
            got, _, raw = self._raw_post(path, body) if isinstance(body, bytes) else post(self.server, path, body)
            self.assertEqual(got, status, raw)
            err = json.loads(raw)
            self.assertEqual(err["type"], "error", raw)
            self.assertEqual(err["error"]["type"], etype, raw)
            self.assertIn(words, err["error"]["message"])
        status, _, raw = post(self.server, "/v1/responses", {"input": [{"type": "function_call", "name": "f", "arguments": "{}"}]})
        self.assertEqual(status, 400)
        self.assertEqual(json.loads(raw)["error"]["param"], "input[0].call_id")
        self.server.client().complete(prompt="Once", max_tokens=2, temperature=0)  # still serving

    def _raw_post(self, path, data):
        u = urllib.parse.urlparse(self.server.http)
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
        try:
            conn.request("POST", path, body=data, headers={"Content-Type": "application/json"})
            r = conn.getresponse()
            return r.status, dict(r.getheaders()), r.read()
        finally:
            conn.close()

    def test_a_client_that_disconnects_cancels_its_request(self):
        for path, body, label in [
            ("/v1/messages", {"max_tokens": 100000, "stream": True, "ignore_eos": True,
                              "messages": [{"role": "user", "content": QUESTION}]}, "messages"),
            ("/v1/responses", {"max_output_tokens": 100000, "stream": True, "ignore_eos": True, "input": QUESTION}, "responses"),
        ]:
            u = urllib.parse.urlparse(self.server.http)
            data = json.dumps(body).encode()
            s = socket.create_connection((u.hostname, u.port), timeout=30)
            s.sendall(b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                      % (path.encode(), len(data), data))
            got = b""
            while b"delta" not in got:  # text is flowing
                got += s.recv(4096)
            s.close()

            def gone():
                _, _, text = A.http_call(self.server.http, "GET", "/metrics")
                return A.metric_value(text.decode(), "cortex_requests_total", endpoint=label, reason="client_gone")
            support.wait_until(lambda: gone() == 1, 20, what="the %s request cancelled as client_gone" % label)
        stats = self.client().stats()
        self.assertEqual(stats["running"], 0)


@support.needs_reference_data
class AgentsApiAuthTest(A.AuthServerTestCase):
    """--auth: the key from `x-api-key` (Anthropic's clients) or `Authorization: Bearer`."""

    SECRET = A.new_secret()
    KEYS = [A.key_entry("ada", "default", SECRET)]
    TIERS = {"default": {}}
    SERVER_ARGS = ("--chat-template", QWEN3)

    def test_x_api_key_and_bearer(self):
        body = {"model": "stories260K", "max_tokens": 4, "messages": [{"role": "user", "content": "Hi"}]}
        for headers in ({"x-api-key": self.SECRET}, {"Authorization": "Bearer " + self.SECRET}):
            status, _, raw = post(self.server, "/v1/messages", body, headers=headers)
            self.assertEqual(status, 200, raw)
            status, _, raw = post(self.server, "/v1/responses", {"input": "Hi", "max_output_tokens": 4}, headers=headers)
            self.assertEqual(status, 200, raw)
        for headers in ({}, {"x-api-key": "cs-wrong"}):
            status, hdrs, raw = post(self.server, "/v1/messages", body, headers=headers)
            self.assertEqual(status, 401, raw)
            self.assertEqual(json.loads(raw)["error"]["type"], "authentication_error")
            self.assertEqual(json.loads(raw)["type"], "error")
            status, _, raw = post(self.server, "/v1/responses", {"input": "Hi"}, headers=headers)
            self.assertEqual(status, 401, raw)
            self.assertEqual(json.loads(raw)["error"]["type"], "authentication_error")  # OpenAI's shape there
            self.assertIn("code", json.loads(raw)["error"])

    def test_anthropic_sdk_sends_its_key(self):
        node = shutil.which("node")
        if node is None or not os.path.isdir(os.path.join(NODE_DIR, "node_modules", "@anthropic-ai", "sdk")):
            self.fail("node or @anthropic-ai/sdk is missing: run scripts/setup")
        script = """
import Anthropic from '@anthropic-ai/sdk';
const [base, key] = process.argv.slice(1);
const ok = new Anthropic({ baseURL: base, apiKey: key, maxRetries: 0 });
const m = await ok.messages.create({ model: 'stories260K', max_tokens: 4, messages: [{ role: 'user', content: 'Hi' }] });
const bad = new Anthropic({ baseURL: base, apiKey: 'cs-nope', maxRetries: 0 });
let status = 0;
try { await bad.messages.create({ model: 'stories260K', max_tokens: 4, messages: [{ role: 'user', content: 'Hi' }] }); }
catch (e) { status = e.status; }
console.log(JSON.stringify({ type: m.type, stop: m.stop_reason, refused: status }));
"""
        r = subprocess.run([node, "--input-type=module", "-e", script, self.server.http, self.SECRET], cwd=NODE_DIR,
                           capture_output=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr.decode())
        out = json.loads(r.stdout.decode().strip().splitlines()[-1])
        self.assertEqual(out, {"type": "message", "stop": out["stop"], "refused": 401})
        self.assertIn(out["stop"], ("end_turn", "max_tokens"))


if __name__ == "__main__":
    unittest.main()
