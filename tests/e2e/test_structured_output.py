"""Structured outputs end to end (issue 13): a real cortexd on stories260K and
on a synthetic model (`cortex make-model --shape tiny`, random weights) must
return, for each of 34 JSON Schemas of our own (nested objects, enums,
arrays, optional fields, patterns, formats, ranges, anyOf/oneOf, $ref), a
document that Python's json parses and jsonschema (Debian's
python3-jsonschema, an independent validator) validates: greedy and sampled,
over the wire (`params.json_schema`) and over HTTP (`response_format`
json_schema). The schemas bound every string, array and number, so each
document fits the budget and every generation must end `stop`, never
`length`. Also: GBNF grammars (`params.grammar`, the completions `grammar`
extension), json_object, and the 400s for bad grammars and unsupported
keywords."""

import json
import os
import subprocess
import tempfile
import unittest

import jsonschema

from tests.e2e import http_support, support

S = {"type": "string", "maxLength": 8}

SCHEMAS = [
    {"type": "object", "properties": {"name": {"type": "string", "maxLength": 12},
                                      "age": {"type": "integer", "minimum": 0, "maximum": 120}},
     "required": ["name", "age"], "additionalProperties": False},
    {"type": "object", "properties": {"color": {"enum": ["red", "green", "blue"]}}, "required": ["color"]},
    {"type": "array", "items": {"type": "integer", "minimum": -50, "maximum": 50}, "minItems": 1, "maxItems": 4},
    {"type": "boolean"},
    {"type": ["integer", "null"], "minimum": 0, "maximum": 9},
    {"type": "object", "properties": {"user": {"type": "object", "properties": {
        "id": {"type": "integer", "minimum": 1, "maximum": 9999},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 6}, "maxItems": 3}},
        "required": ["id", "tags"]}}, "required": ["user"]},
    {"type": "object", "properties": {"a": {"type": "boolean"}, "b": {"type": "integer", "minimum": 0, "maximum": 5},
                                      "c": {"type": "string", "maxLength": 5}}},
    {"type": "object", "properties": {"code": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{2}$"}}, "required": ["code"]},
    {"type": "object", "properties": {"version": {"const": 2}, "kind": {"const": "point"}}, "required": ["version", "kind"]},
    {"anyOf": [{"type": "integer", "minimum": 0, "maximum": 100}, {"type": "string", "maxLength": 4}]},
    {"oneOf": [{"type": "boolean"}, {"type": "null"},
               {"type": "object", "properties": {"x": {"type": "integer", "minimum": 0, "maximum": 3}},
                "required": ["x"], "additionalProperties": False}]},
    {"$defs": {"point": {"type": "object", "properties": {"x": {"type": "integer", "minimum": -10, "maximum": 10},
                                                         "y": {"type": "integer", "minimum": -10, "maximum": 10}},
                         "required": ["x", "y"], "additionalProperties": False}},
     "type": "object", "properties": {"start": {"$ref": "#/$defs/point"}, "end": {"$ref": "#/$defs/point"}},
     "required": ["start", "end"]},
    {"type": "object", "properties": {"score": {"type": "number", "minimum": 0, "maximum": 1}}, "required": ["score"]},
    {"type": "string", "minLength": 3, "maxLength": 8},
    {"type": "object", "properties": {"day": {"type": "string", "format": "date"}}, "required": ["day"]},
    {"type": "string", "format": "uuid"},
    {"type": "string", "format": "date-time"},
    {"enum": [1, "two", None, True, [3]]},
    {"type": "array", "items": {"type": "object", "properties": {"k": {"enum": ["a", "b"]},
                                                                  "v": {"type": "integer", "minimum": 0, "maximum": 9}},
                                "required": ["k", "v"], "additionalProperties": False}, "minItems": 2, "maxItems": 3},
    {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 10},
    {"type": "integer", "minimum": -1000, "maximum": -100},
    {"type": "array", "maxItems": 0},
    {"type": "array", "items": {"type": "array", "items": {"type": "boolean"}, "maxItems": 2}, "maxItems": 2},
    {"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"type": "object", "properties": {
        "c": {"type": "integer", "minimum": 0, "maximum": 9}}, "required": ["c"]}}, "required": ["b"]}},
     "required": ["a"]},
    {"type": "string", "pattern": "^(yes|no|maybe)$"},
    {"type": "string", "pattern": "^\\+?\\d{1,3}-\\d{3}$"},
    {"type": "object", "properties": {"x": {"type": "boolean"}, "y": {"type": "boolean"}, "z": {"type": "boolean"}},
     "required": ["z"]},
    {"type": ["string", "integer"], "maxLength": 3, "minimum": 0, "maximum": 9},
    {"type": "object", "properties": {"note": {"type": ["string", "null"], "maxLength": 6},
                                      "n": {"type": ["number", "null"], "minimum": -5, "maximum": 5}},
     "required": ["note", "n"]},
    {"type": "integer"},
    {"type": "number"},
    {"title": "Flag", "description": "annotations are ignored", "type": "object",
     "properties": {"ok": {"type": "boolean", "description": "the flag"}}, "required": ["ok"],
     "additionalProperties": False},
    {"type": "object", "properties": {"id": {"type": "integer", "minimum": 0, "maximum": 99}, "name": S,
                                      "kind": {"enum": ["cat", "dog"]},
                                      "pos": {"type": "array", "items": {"type": "number", "minimum": -1, "maximum": 1},
                                              "minItems": 2, "maxItems": 2}},
     "required": ["id", "kind", "pos"], "additionalProperties": False},
    {"type": "object", "properties": {"items": {"type": "array", "items": {"anyOf": [
        {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 9}}, "required": ["n"],
         "additionalProperties": False}, S]}, "maxItems": 3}}, "required": ["items"]},
]

PROMPT = "Once upon a time"
SEEDS = (1, 2)


def make_synthetic_model(path):
    exe = os.path.join(support.BIN_DIR, "cortex")
    r = subprocess.run([exe, "make-model", "--shape", "tiny", "--type", "q8_0", "--out", path],
                       capture_output=True, timeout=120)
    if r.returncode != 0:
        raise AssertionError("make-model failed: %s" % r.stderr.decode())


class _StructuredBase:
    """The checks, run against the server of the concrete class."""

    server = None
    MAX_TOKENS = 480

    def check_document(self, schema, text, finished, how):
        self.assertEqual(finished["reason"], "stop", "%s: %r ended %s" % (how, text, finished["reason"]))
        try:
            doc = json.loads(text)
        except ValueError as e:
            self.fail("%s: not JSON (%s): %r" % (how, e, text))
        try:
            jsonschema.validate(doc, schema)
        except jsonschema.ValidationError as e:
            self.fail("%s: %r does not validate: %s" % (how, text, e.message))

    def test_wire_every_schema_greedy_and_sampled(self):
        self.assertGreaterEqual(len(SCHEMAS), 30)
        c = self.server.client(timeout_s=120)
        for i, schema in enumerate(SCHEMAS):
            runs = [dict(temperature=0)] + [dict(temperature=1.0, seed=s) for s in SEEDS]
            streams = [(r, c.submit(prompt=PROMPT, json_schema=schema, max_tokens=self.MAX_TOKENS, **r)) for r in runs]
            for r, st in streams:  # in flight together: masks computed in the same steps
                text, fin = st.result()
                self.check_document(schema, text, fin, "schema %d %s" % (i, r))

    def test_http_response_format_json_schema(self):
        for i, schema in enumerate(SCHEMAS[::3]):
            for extra in ({"temperature": 0}, {"temperature": 1.0, "seed": 3}):
                body = dict(messages=[{"role": "user", "content": "Give me JSON"}], max_tokens=self.MAX_TOKENS,
                            response_format={"type": "json_schema",
                                             "json_schema": {"name": "s%d" % i, "schema": schema, "strict": True}},
                            **extra)
                status, ans = http_support.post_json(self.server.http, "/v1/chat/completions", body)
                self.assertEqual(status, 200, ans)
                ch = ans["choices"][0]
                fin = {"reason": ch["finish_reason"]}
                self.check_document(schema, ch["message"]["content"], fin, "http schema %d %s" % (i, extra))

    def test_gbnf_grammar_over_wire_and_completions_extension(self):
        gbnf = 'root ::= "answer: " ("yes" | "no") ", n=" [1-9] [0-9]?'
        c = self.server.client()
        for r in (dict(temperature=0), dict(temperature=1.0, seed=5)):
            text, fin = c.complete(prompt=PROMPT, grammar=gbnf, max_tokens=64, **r)
            self.assertEqual(fin["reason"], "stop")
            self.assertRegex(text, r"^answer: (yes|no), n=[1-9][0-9]?$")
        status, ans = http_support.post_json(self.server.http, "/v1/completions",
                                             dict(prompt=PROMPT, grammar=gbnf, max_tokens=64, temperature=0))
        self.assertEqual(status, 200, ans)
        self.assertRegex(ans["choices"][0]["text"], r"^answer: (yes|no), n=[1-9][0-9]?$")

    def test_max_tokens_first_ends_length_with_a_prefix(self):
        schema = {"type": "object", "properties": {"s": {"type": "string", "minLength": 40, "maxLength": 50}},
                  "required": ["s"]}
        text, fin = self.server.client().complete(prompt=PROMPT, json_schema=schema, max_tokens=5, temperature=0)
        self.assertEqual(fin["reason"], "length")
        self.assertTrue(text.startswith("{"), text)  # a prefix of a document, cut by max_tokens


class StructuredOutputStories(_StructuredBase, support.ServerTestCase):
    def test_json_object_and_errors(self):
        status, ans = http_support.post_json(self.server.http, "/v1/chat/completions", dict(
            messages=[{"role": "user", "content": "x"}], max_tokens=200, temperature=0,
            response_format={"type": "json_object"}))
        self.assertEqual(status, 200, ans)
        ch = ans["choices"][0]
        if ch["finish_reason"] == "stop":  # an open-ended object may run out of tokens; then it is a prefix
            self.assertIsInstance(json.loads(ch["message"]["content"]), dict)
        else:
            self.assertTrue(ch["message"]["content"].startswith("{"))
        status, ans = http_support.post_json(self.server.http, "/v1/chat/completions", dict(
            messages=[{"role": "user", "content": "x"}],
            response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": {
                "type": "array", "uniqueItems": True}}}))
        self.assertEqual(status, 400, ans)
        self.assertEqual(ans["error"]["param"], "response_format.json_schema.schema")
        self.assertIn("'uniqueItems'", ans["error"]["message"])
        status, ans = http_support.post_json(self.server.http, "/v1/completions",
                                             dict(prompt="x", grammar="root ::= x"))
        self.assertEqual(status, 400, ans)
        self.assertIn("rule 'x' is used but never defined", ans["error"]["message"])
        c = self.server.client()
        for params, needle in ((dict(grammar='root ::= "a" |'), None),
                               (dict(grammar="root ::= [z-a]"), "upper end below"),
                               (dict(json_schema={"type": "string", "format": "email"}), "format 'email'"),
                               (dict(json_schema={"type": "object"}, grammar='root ::= "{}"'), "not both")):
            if needle is None:
                text, fin = c.complete(prompt=PROMPT, max_tokens=8, temperature=0, **params)
                self.assertIn(text, ("", "a"))
                continue
            with self.assertRaises(support.cortexstream.CortexError) as cm:
                c.complete(prompt=PROMPT, max_tokens=8, **params)
            self.assertEqual(cm.exception.code, 400)
            self.assertIn(needle, cm.exception.message)


class StructuredOutputSynthetic(_StructuredBase, support.ServerTestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        path = os.path.join(cls.tmp.name, "tiny-q8_0.gguf")
        make_synthetic_model(path)
        cls.server = support.Cortexd(model=path).start()

    @classmethod
    def tearDownClass(cls):
        try:
            super().tearDownClass()
        finally:
            cls.tmp.cleanup()


if __name__ == "__main__":
    unittest.main()
