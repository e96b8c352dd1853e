"""Tool calls and reasoning end to end (issue 27): cortexd on stories260K
with real chat templates (../shared/golden/chat/templates), each detected as
its family's call syntax; forced calls (tool_choice required or named) from
the official OpenAI Node SDK (tests/e2e/node/tool_calls_test.mjs; the Vercel
AI SDK and LangChain.js too when installed there), streamed and not, over
ZeroMQ as well, must give calls whose arguments validate against the tool's
schema (python3-jsonschema); `auto` gives text when the model writes no
opener; reasoning a constrained text writes comes apart from the content."""

import json
import os
import shutil
import subprocess
import tempfile
import unittest

import jsonschema

from tests.e2e import support

NODE_DIR = os.path.join(support.REPO_DIR, "tests", "e2e", "node")
NODE_TEST = os.path.join(NODE_DIR, "tool_calls_test.mjs")
TEMPLATES = os.path.join(support.SHARED_DIR, "golden", "chat", "templates")
LOCAL_TEMPLATES = os.path.join(support.REPO_DIR, "tests", "data", "chat_templates")

TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "The weather in a city for some days",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "maxLength": 12},
            "days": {"type": "integer", "minimum": 1, "maximum": 7},
            "unit": {"enum": ["celsius", "fahrenheit"]}},
            "required": ["city", "days"], "additionalProperties": False}}},
    {"type": "function", "function": {
        "name": "book_table", "description": "Book a table",
        "parameters": {"type": "object", "properties": {
            "date": {"type": "string", "format": "date"},
            "people": {"type": "integer", "minimum": 1, "maximum": 12},
            "vegan": {"type": "boolean"}},
            "required": ["date", "people"]}}},
]
SCHEMAS = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}
MESSAGES = [{"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "Once upon a time, what is the weather in Paris?"}]

# Template file -> the family cortexd must detect for it.
CASES = [
    ("qwen3.jinja", "hermes"),
    ("qwen2_5.jinja", "hermes"),
    ("llama3_1.jinja", "hermes"),  # the golden llama3_1 is a tool-less variant: the Hermes convention
    ("llama3_3.jinja", "llama3"),
    ("mistral_v0_3_tools.jinja", "mistral"),
    ("deepseek_v3.jinja", "deepseek"),
    ("zephyr.jinja", "hermes"),  # no tool syntax of its own: the Hermes convention
    ("gpt_oss.jinja", "harmony"),
]


def template_path(name):
    for d in (TEMPLATES, LOCAL_TEMPLATES):
        p = os.path.join(d, name)
        if os.path.exists(p):
            return p
    return None


def check_call(test, call, where):
    """A call is {id, name, arguments}: a known tool, arguments valid JSON text that validates."""
    test.assertTrue(call.get("id"), where)
    test.assertIn(call["name"], SCHEMAS, where)
    args = json.loads(call["arguments"])
    jsonschema.validate(args, SCHEMAS[call["name"]], format_checker=jsonschema.FormatChecker())


class ToolCallsTemplateTest(unittest.TestCase):
    """One cortexd per template."""

    def run_template(self, template, family):
        path = template_path(template)
        if path is None:
            self.skipTest("%s: template %s is in neither ../shared/golden/chat/templates nor tests/data" % (support.NEEDS_REFERENCE, template))
        server = support.Cortexd("--chat-template", path).start()
        try:
            self.assertIn("tool calls: %s" % family, server.log())
            self.check_wire(server)
            self.check_node(server)
            self.check_reasoning(server)
        finally:
            code = server.stop()
            server.close()
            self.assertEqual(code, 0)

    def check_wire(self, server):
        # The timeout only detects a hang: a call may be hundreds of constrained
        # tokens, which a loaded 2-core machine takes well over 30 s to sample.
        c = server.client(timeout_s=600)
        # Not streamed: finished holds the calls.
        for seed in (1, 2, 3):
            text, fin = c.complete(messages=MESSAGES, stream=False, max_tokens=1000, temperature=1.0, seed=seed,
                                   extra={"tools": TOOLS, "tool_choice": "required"})
            self.assertEqual(fin["reason"], "tool_calls", fin)
            self.assertGreaterEqual(len(fin["tool_calls"]), 1)
            for call in fin["tool_calls"]:
                check_call(self, call, "wire, seed %d" % seed)
        # Streamed: chunks carry typed deltas; the pieces of an index concatenate.
        calls = {}
        reason = None
        for ev in c.submit(messages=MESSAGES, max_tokens=1000, temperature=1.0, seed=4,
                           extra={"tools": TOOLS, "tool_choice": {"type": "function", "function": {"name": "book_table"}}}):
            for d in ev.get("tool_calls") or []:
                if ev["t"] == "chunk":
                    cur = calls.setdefault(d["index"], {"id": d["id"], "name": d["name"], "arguments": ""})
                    cur["arguments"] += d["arguments"]
                else:
                    calls[len(calls)] = dict(d)
            if ev["t"] == "finished":
                reason = ev["reason"]
        self.assertEqual(reason, "tool_calls")
        self.assertEqual(len(calls), 1)
        self.assertEqual(calls[0]["name"], "book_table")
        check_call(self, calls[0], "wire stream")
        # tool_choice none: no tools in the prompt, plain text.
        text, fin = c.complete(messages=MESSAGES, max_tokens=16, temperature=0, extra={"tools": TOOLS, "tool_choice": "none"})
        self.assertIn(fin["reason"], ("stop", "length"))
        self.assertNotIn("tool_calls", fin)

    def check_node(self, server):
        node = shutil.which("node")
        if node is None or not os.path.isdir(os.path.join(NODE_DIR, "node_modules", "openai")):
            self.fail("node or the openai SDK is missing: run scripts/setup")
        with tempfile.TemporaryDirectory() as d:
            spec = os.path.join(d, "spec.json")
            out = os.path.join(d, "out.json")
            with open(spec, "w") as f:
                json.dump({"model": "stories260K", "tools": TOOLS, "messages": MESSAGES}, f)
            env = dict(os.environ, CORTEX_OPENAI_BASE_URL=server.http + "/v1", CORTEX_TOOLS_SPEC=spec, CORTEX_TOOLS_OUT=out)
            r = subprocess.run([node, "--test", "--test-reporter=spec", NODE_TEST], env=env, capture_output=True, timeout=300)
            log = r.stdout.decode("utf-8", "replace") + r.stderr.decode("utf-8", "replace")
            self.assertEqual(r.returncode, 0, "node --test failed:\n%s\ncortexd log:\n%s" % (log, server.log()))
            with open(out) as f:
                results = json.load(f)
        for case, res in results.items():
            if case == "openai_auto":
                self.assertEqual(res["tool_calls"], [])
                continue
            self.assertGreaterEqual(len(res["tool_calls"]), 1, case)
            for call in res["tool_calls"]:
                check_call(self, call, case)
            if case.startswith("openai"):
                self.assertEqual(res["finish_reason"], "tool_calls", case)
                self.assertIn(res["content"], (None, ""), case)  # nothing before the forced call
        self.assertIn("openai_stream_named", results)

    def check_reasoning(self, server):
        """A block the constrained text writes is reasoning (http.md): a grammar makes stories260K write one."""
        import urllib.request
        grammar = 'root ::= "<think>" [a-z ]{3,20} "</think>" "\\n\\n" [a-z ]{3,20}'
        body = {"messages": MESSAGES, "max_tokens": 80, "temperature": 1, "seed": 3, "grammar": grammar}
        for stream in (False, True):
            req = urllib.request.Request(server.http + "/v1/chat/completions",
                                         data=json.dumps(dict(body, stream=stream)).encode(),
                                         headers={"Content-Type": "application/json"})
            raw = urllib.request.urlopen(req, timeout=60).read().decode()
            if stream:
                content, reasoning = "", ""
                for line in raw.splitlines():
                    if line.startswith("data: {"):
                        delta = json.loads(line[6:])["choices"][0]["delta"]
                        content += delta.get("content") or ""
                        reasoning += delta.get("reasoning_content") or ""
            else:
                msg = json.loads(raw)["choices"][0]["message"]
                content, reasoning = msg["content"], msg.get("reasoning_content", "")
            with open(template_path_of(server)) as f:
                text = f.read()
            if "<think>" not in text or "<|channel|>" in text:  # not a think-tag family: the text stays as it is
                self.assertIn("</think>", content, raw)
                continue
            self.assertTrue(reasoning.strip(), raw)
            self.assertNotIn("<think>", content)
            self.assertNotIn("</think>", content)


# Varied argument schemas for the sampled run: nested objects, arrays,
# enums, formats, numeric ranges, optional properties.
VARIED = [
    {"type": "object", "properties": {"q": {"type": "string", "maxLength": 8}}, "required": ["q"]},
    {"type": "object", "properties": {"n": {"type": "integer", "minimum": -5, "maximum": 5},
                                      "x": {"type": "number", "minimum": 0, "maximum": 1}}, "required": ["n"]},
    {"type": "object", "properties": {"tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}, "minItems": 1, "maxItems": 3}},
     "required": ["tags"]},
    {"type": "object", "properties": {"when": {"type": "string", "format": "date"}, "id": {"type": "string", "format": "uuid"}},
     "required": ["when", "id"]},
    {"type": "object", "properties": {"p": {"type": "object", "properties": {"ok": {"type": "boolean"},
                                                                           "v": {"anyOf": [{"type": "null"}, {"type": "integer"}]}},
                                            "required": ["ok", "v"]}}, "required": ["p"]},
]


@support.needs_reference_data  # Qwen3's chat template
class RequiredSampledTest(support.ServerTestCase):
    """Every call made under `required` validates: 200 sampled requests (temperature 1) over varied schemas."""

    SERVER_ARGS = ("--chat-template", os.path.join(TEMPLATES, "qwen3.jinja"))

    def test_200_sampled_required_calls_validate(self):
        c = self.client(timeout_s=300)
        tools = [{"type": "function", "function": {"name": "f%d" % i, "parameters": sch}} for i, sch in enumerate(VARIED)]
        schemas = {"f%d" % i: sch for i, sch in enumerate(VARIED)}
        streams = []
        for k in range(200):
            i = k % len(VARIED)
            choice = "required" if k % 2 else {"type": "function", "function": {"name": "f%d" % i}}
            streams.append(c.submit(messages=MESSAGES, stream=False, max_tokens=1000, temperature=1.0, seed=1000 + k,
                                    extra={"tools": tools, "tool_choice": choice, "parallel_tool_calls": k % 3 == 0}))
        n_valid = 0
        for k, st in enumerate(streams):
            text, fin = st.result()
            self.assertEqual(fin["reason"], "tool_calls", (k, fin))
            for call in fin["tool_calls"]:
                jsonschema.validate(json.loads(call["arguments"]), schemas[call["name"]],
                                    format_checker=jsonschema.FormatChecker())
            n_valid += 1
        print("required/named calls that validate: %d/200" % n_valid)
        self.assertEqual(n_valid, 200)


class ThinkingOpenTest(unittest.TestCase):
    """DeepSeek R1's generation prompt opens <think>: the output starts as reasoning (http.md)."""

    def test_deepseek_r1_output_starts_as_reasoning(self):
        import urllib.request
        path = template_path("deepseek_r1.jinja")
        server = support.Cortexd("--chat-template", path).start()
        try:
            self.assertIn("tool calls: deepseek", server.log())
            body = {"messages": MESSAGES, "max_tokens": 30, "temperature": 0}
            req = urllib.request.Request(server.http + "/v1/chat/completions", data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
            msg = json.loads(urllib.request.urlopen(req, timeout=60).read())["choices"][0]["message"]
            self.assertTrue(msg["reasoning_content"].strip(), msg)  # a block still open at the end is reasoning
            self.assertEqual(msg["content"], "")
            # reasoning_format none: the raw text stays in content.
            req = urllib.request.Request(server.http + "/v1/chat/completions",
                                         data=json.dumps(dict(body, reasoning_format="none")).encode(),
                                         headers={"Content-Type": "application/json"})
            msg = json.loads(urllib.request.urlopen(req, timeout=60).read())["choices"][0]["message"]
            self.assertNotIn("reasoning_content", msg)
            self.assertTrue(msg["content"])
        finally:
            self.assertEqual(server.stop(), 0)
            server.close()


def template_path_of(server):
    return server.args[server.args.index("--chat-template") + 1]


def _make(template, family):
    def test(self):
        self.run_template(template, family)
    return test


for _template, _family in CASES:
    setattr(ToolCallsTemplateTest, "test_" + _template.replace(".jinja", ""), _make(_template, _family))


if __name__ == "__main__":
    unittest.main()
