// The official OpenAI Node SDK against a real cortexd (http.md).
//
// Run by tests/e2e/test_openai_sdk.py, which starts cortexd and computes the
// references; environment:
//   CORTEX_OPENAI_BASE_URL  http://127.0.0.1:PORT/v1
//   CORTEX_E2E_REFERENCE    a JSON file: the model id and n_ctx (wire
//                           `models`), the ZeroMQ path's answers to the same
//                           requests (text, usage, logprobs), and the golden
//                           greedy generations and embeddings of
//                           ../shared/golden (llama.cpp).
// Usage: node --test tests/e2e/node/openai_sdk_test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

import OpenAI, { APIError, APIUserAbortError, BadRequestError, InternalServerError, NotFoundError } from 'openai';

const baseURL = process.env.CORTEX_OPENAI_BASE_URL;
const refPath = process.env.CORTEX_E2E_REFERENCE;
if (!baseURL || !refPath) {
  throw new Error('set CORTEX_OPENAI_BASE_URL and CORTEX_E2E_REFERENCE (tests/e2e/test_openai_sdk.py does)');
}
const ref = JSON.parse(readFileSync(refPath, 'utf8'));
const root = baseURL.replace(/\/v1\/?$/, '');
// No retries: a retried 5xx or a reconnect would hide what the server did.
const client = new OpenAI({ baseURL, apiKey: 'unused', maxRetries: 0, timeout: 30_000 });
const model = ref.model_id;

// Reads a whole SSE stream: per choice index, its text, chunk count, the
// roles and finish reasons seen; and the usage chunk, if any.
async function collect(stream) {
  const choices = new Map();
  let usage = null;
  let chunks = 0;
  let usageChunks = 0;
  for await (const chunk of stream) {
    chunks++;
    if (chunk.usage) {
      usage = chunk.usage;
      usageChunks++;
      assert.deepEqual(chunk.choices, [], 'the usage chunk has empty choices');
    }
    for (const c of chunk.choices) {
      if (!choices.has(c.index)) choices.set(c.index, { text: '', roles: [], finish: [], first: true, logprobs: [] });
      const s = choices.get(c.index);
      const piece = c.delta !== undefined ? c.delta.content : c.text;
      if (c.delta?.role) s.roles.push({ role: c.delta.role, first: s.first });
      s.first = false;
      if (piece) {
        assert.equal(s.finish.length, 0, `choice ${c.index}: text after its finish_reason`);
        s.text += piece;
      }
      if (c.logprobs?.content) s.logprobs.push(...c.logprobs.content);
      if (c.finish_reason) s.finish.push(c.finish_reason);
    }
  }
  return { choices, usage, chunks, usageChunks };
}

// Checks each choice of a collected stream: role first, exactly one finish.
function assertWellFormed(got, n) {
  assert.deepEqual([...got.choices.keys()].sort(), [...Array(n).keys()], 'one stream per choice index');
  for (const [i, s] of got.choices) {
    if (s.roles.length) {
      assert.deepEqual(s.roles, [{ role: 'assistant', first: true }], `choice ${i}: role only in its first chunk`);
    }
    assert.equal(s.finish.length, 1, `choice ${i}: exactly one finish_reason, got ${JSON.stringify(s.finish)}`);
  }
}

// Parses the Prometheus text of /metrics into {"name{labels}": value}.
async function metrics() {
  const r = await fetch(`${root}/metrics`);
  assert.equal(r.status, 200);
  const out = {};
  for (const line of (await r.text()).split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = line.match(/^(\S+)\s+(\S+)/);
    if (m) out[m[1]] = Number(m[2]);
  }
  return out;
}

function sumMatching(m, prefix, pred) {
  let s = 0;
  for (const [k, v] of Object.entries(m)) if (k.startsWith(prefix) && pred(k)) s += v;
  return s;
}

const chat = ref.chat;  // greedy: {messages, max_tokens, text, prompt_tokens, completion_tokens, finish}

test('models: list and retrieve name the loaded model', async () => {
  const page = await client.models.list();
  assert.deepEqual(page.data.map((m) => m.id), [model]);
  assert.equal(page.data[0].object, 'model');
  const m = await client.models.retrieve(model);
  assert.equal(m.id, model);
  assert.equal(m.object, 'model');
  await assert.rejects(client.models.retrieve('no-such-model'), NotFoundError);
});

test('chat non-stream: greedy text equals the ZeroMQ path', async () => {
  const r = await client.chat.completions.create({
    model, messages: chat.messages, max_tokens: chat.max_tokens, temperature: 0,
  });
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.model, model);
  assert.equal(r.choices.length, 1);
  assert.equal(r.choices[0].index, 0);
  assert.equal(r.choices[0].message.role, 'assistant');
  assert.equal(r.choices[0].message.content, chat.text);
  assert.equal(r.choices[0].finish_reason, chat.finish);
  assert.equal(r.usage.prompt_tokens, chat.prompt_tokens);
  assert.equal(r.usage.completion_tokens, chat.completion_tokens);
  assert.equal(r.usage.total_tokens, chat.prompt_tokens + chat.completion_tokens);
});

test('chat non-stream, model omitted: same text', async () => {
  const r = await client.chat.completions.create({ messages: chat.messages, max_tokens: chat.max_tokens, temperature: 0 });
  assert.equal(r.choices[0].message.content, chat.text);
});

test('chat with seed and temperature: text equals the ZeroMQ path', async () => {
  const s = ref.chat_seeded;
  const r = await client.chat.completions.create({
    model, messages: s.messages, max_tokens: s.max_tokens, temperature: s.temperature, seed: s.seed,
  });
  assert.equal(r.choices[0].message.content, s.text);
  const st = await client.chat.completions.create({
    model, messages: s.messages, max_tokens: s.max_tokens, temperature: s.temperature, seed: s.seed, stream: true,
  });
  const got = await collect(st);
  assert.equal(got.choices.get(0).text, s.text);
});

test('chat stream: chunks concatenate to the ZeroMQ text; role first, one finish', async () => {
  const stream = await client.chat.completions.create({
    model, messages: chat.messages, max_tokens: chat.max_tokens, temperature: 0, stream: true,
  });
  const got = await collect(stream);
  assertWellFormed(got, 1);
  assert.equal(got.choices.get(0).text, chat.text);
  assert.deepEqual(got.choices.get(0).finish, [chat.finish]);
  assert.equal(got.usage, null, 'no usage chunk unless include_usage');
  assert.ok(got.chunks >= 3, `tokens are streamed, not sent in one chunk (${got.chunks} chunks)`);
});

test('chat stream with stream_options.include_usage: one final usage chunk', async () => {
  const stream = await client.chat.completions.create({
    model, messages: chat.messages, max_tokens: chat.max_tokens, temperature: 0, stream: true,
    stream_options: { include_usage: true },
  });
  const got = await collect(stream);
  assertWellFormed(got, 1);
  assert.equal(got.choices.get(0).text, chat.text);
  assert.equal(got.usageChunks, 1);
  assert.equal(got.usage.prompt_tokens, chat.prompt_tokens);
  assert.equal(got.usage.completion_tokens, chat.completion_tokens);
  assert.equal(got.usage.total_tokens, chat.prompt_tokens + chat.completion_tokens);
});

test('chat n=3: three choices 0..2, each the greedy text, prompt counted once', async () => {
  const r = await client.chat.completions.create({
    model, messages: chat.messages, max_tokens: chat.max_tokens, temperature: 0, n: 3,
  });
  assert.deepEqual(r.choices.map((c) => c.index), [0, 1, 2]);
  for (const c of r.choices) assert.equal(c.message.content, chat.text);
  assert.equal(r.usage.prompt_tokens, chat.prompt_tokens);
  assert.equal(r.usage.completion_tokens, 3 * chat.completion_tokens);

  const stream = await client.chat.completions.create({
    model, messages: chat.messages, max_tokens: chat.max_tokens, temperature: 0, n: 3, stream: true,
  });
  const got = await collect(stream);
  assertWellFormed(got, 3);
  for (const [, s] of got.choices) assert.equal(s.text, chat.text);
});

test('chat n=3 sampled: three choices that are not all the same', async () => {
  const r = await client.chat.completions.create({
    model, messages: chat.messages, max_tokens: 32, temperature: 1.0, seed: 7, n: 3,
  });
  assert.deepEqual(r.choices.map((c) => c.index), [0, 1, 2]);
  const texts = new Set(r.choices.map((c) => c.message.content));
  assert.ok(texts.size > 1, 'n choices are independent samples, not copies');
});

test('chat logprobs with top_logprobs: values equal the ZeroMQ path', async () => {
  const lp = ref.chat_logprobs;  // [{id, lp, top: [[id, lp]...]}] from the wire, top 3
  const r = await client.chat.completions.create({
    model, messages: chat.messages, max_tokens: chat.max_tokens, temperature: 0, logprobs: true, top_logprobs: 3,
  });
  const content = r.choices[0].logprobs.content;
  assert.equal(content.length, lp.length, 'one entry per generated token');
  assert.equal(content.map((e) => e.token).join(''), chat.text, 'the tokens spell the text');
  content.forEach((e, i) => {
    assert.ok(Math.abs(e.logprob - lp[i].lp) < 1e-4, `token ${i}: ${e.logprob} vs wire ${lp[i].lp}`);
    assert.ok(Array.isArray(e.bytes));
    assert.equal(Buffer.from(e.bytes).toString('utf8'), e.token);
    assert.equal(e.top_logprobs.length, 3);
    e.top_logprobs.forEach((t, k) => {
      assert.ok(Math.abs(t.logprob - lp[i].top[k][1]) < 1e-4, `token ${i} top ${k}`);
    });
    // Greedy: the chosen token is the most likely one.
    assert.equal(e.top_logprobs[0].token, e.token);
  });

  const stream = await client.chat.completions.create({
    model, messages: chat.messages, max_tokens: chat.max_tokens, temperature: 0, logprobs: true, top_logprobs: 3,
    stream: true,
  });
  const got = await collect(stream);
  const sl = got.choices.get(0).logprobs;
  assert.equal(sl.length, lp.length, 'streamed logprobs: one entry per token');
  sl.forEach((e, i) => assert.ok(Math.abs(e.logprob - lp[i].lp) < 1e-4, `streamed token ${i}`));
});

test('completions: greedy text equals the golden (llama.cpp) generation', async () => {
  for (const g of ref.golden) {
    const byText = await client.completions.create({ model, prompt: g.prompt, max_tokens: g.n_gen, temperature: 0 });
    assert.equal(byText.object, 'text_completion');
    assert.equal(byText.choices[0].text, g.text, `prompt ${JSON.stringify(g.prompt)}`);
    assert.equal(byText.usage.prompt_tokens, g.tokens.length);
    assert.equal(byText.usage.completion_tokens, g.n_gen);
    const byIds = await client.completions.create({ model, prompt: g.tokens, max_tokens: g.n_gen, temperature: 0 });
    assert.equal(byIds.choices[0].text, g.text, `prompt ids ${JSON.stringify(g.tokens)}`);
    const stream = await client.completions.create({
      model, prompt: g.prompt, max_tokens: g.n_gen, temperature: 0, stream: true,
    });
    const got = await collect(stream);
    assertWellFormed(got, 1);
    assert.equal(got.choices.get(0).text, g.text);
  }
});

test('completions logprobs: tokens, token_logprobs, top_logprobs equal the ZeroMQ path', async () => {
  const c = ref.completion_logprobs;  // {prompt, max_tokens, text, lp: wire logprobs, top 3}
  const r = await client.completions.create({
    model, prompt: c.prompt, max_tokens: c.max_tokens, temperature: 0, logprobs: 3,
  });
  const l = r.choices[0].logprobs;
  assert.equal(r.choices[0].text, c.text);
  assert.equal(l.tokens.length, c.lp.length);
  assert.equal(l.tokens.join(''), c.text);
  assert.equal(l.token_logprobs.length, c.lp.length);
  assert.equal(l.top_logprobs.length, c.lp.length);
  assert.equal(l.text_offset.length, c.lp.length);
  let offset = l.text_offset[0];
  l.tokens.forEach((tok, i) => {
    assert.ok(Math.abs(l.token_logprobs[i] - c.lp[i].lp) < 1e-4, `token ${i}`);
    const top = Object.values(l.top_logprobs[i]).sort((a, b) => b - a);
    assert.equal(top.length, 3);
    top.forEach((v, k) => assert.ok(Math.abs(v - c.lp[i].top[k][1]) < 1e-4, `token ${i} top ${k}`));
    assert.equal(l.text_offset[i], offset, 'text_offset advances by the token text');
    offset += tok.length;
  });
});

test('stop: the text ends before the first stop string, finish_reason stop', async () => {
  // A stop string from the middle of the greedy text: the answer is the text before its first occurrence.
  const stop = chat.text.slice(Math.floor(chat.text.length / 2), Math.floor(chat.text.length / 2) + 4);
  const expected = chat.text.slice(0, chat.text.indexOf(stop));
  const r = await client.chat.completions.create({
    model, messages: chat.messages, max_tokens: chat.max_tokens, temperature: 0, stop,
  });
  assert.equal(r.choices[0].message.content, expected);
  assert.equal(r.choices[0].finish_reason, 'stop');
  const stream = await client.chat.completions.create({
    model, messages: chat.messages, max_tokens: chat.max_tokens, temperature: 0, stop: [stop, '\u0000never'],
    stream: true,
  });
  const got = await collect(stream);
  assert.equal(got.choices.get(0).text, expected);
  assert.deepEqual(got.choices.get(0).finish, ['stop']);

  const g = ref.golden[0];
  const cstop = g.text.slice(20, 24);
  const c = await client.completions.create({ model, prompt: g.prompt, max_tokens: g.n_gen, temperature: 0, stop: [cstop] });
  assert.equal(c.choices[0].text, g.text.slice(0, g.text.indexOf(cstop)));
  assert.equal(c.choices[0].finish_reason, 'stop');
});

test('embeddings: float and the SDK default (base64) equal the golden within 1e-4', async () => {
  const cases = ref.embeddings;  // [{text, ids, embedding}] from llama.cpp
  const check = (r, label) => {
    assert.equal(r.object, 'list');
    assert.equal(r.data.length, cases.length);
    r.data.forEach((d, i) => {
      assert.equal(d.index, i);
      assert.equal(d.object, 'embedding');
      assert.equal(d.embedding.length, cases[i].embedding.length);
      let worst = 0;
      d.embedding.forEach((v, k) => { worst = Math.max(worst, Math.abs(v - cases[i].embedding[k])); });
      assert.ok(worst < 1e-4, `${label} case ${i}: max abs diff ${worst}`);
    });
    assert.equal(r.usage.prompt_tokens, cases.reduce((s, c) => s + c.ids.length, 0));
  };
  const input = cases.map((c) => c.text);
  check(await client.embeddings.create({ model, input, encoding_format: 'float' }), 'float');
  check(await client.embeddings.create({ model, input }), 'base64');
  const one = await client.embeddings.create({ model, input: cases[0].ids, encoding_format: 'float' });
  assert.equal(one.data.length, 1);
  assert.ok(one.data[0].embedding.every((v, k) => Math.abs(v - cases[0].embedding[k]) < 1e-4), 'token ids input');
});

test('errors: each class the SDK surfaces, with the OpenAI error fields', async () => {
  const base = { model, messages: chat.messages, max_tokens: 4 };
  // 400 invalid param.
  await assert.rejects(client.chat.completions.create({ ...base, temperature: 5 }), (e) => {
    assert.ok(e instanceof BadRequestError, `got ${e}`);
    assert.equal(e.status, 400);
    assert.equal(e.param, 'temperature');
    assert.equal(e.code, 'invalid_param');
    assert.equal(e.type, 'invalid_request_error');
    assert.ok(e.error.message.length > 0);
    return true;
  });
  await assert.rejects(client.chat.completions.create({ ...base, n: 9 }), (e) => e instanceof BadRequestError && e.param === 'n');
  // 422 context overflow is 400 context_length_exceeded.
  await assert.rejects(
    client.completions.create({ model, prompt: Array(ref.n_ctx + 8).fill(300), max_tokens: 1 }),
    (e) => e instanceof BadRequestError && e.code === 'context_length_exceeded' && e.type === 'invalid_request_error');
  // 404 unknown model.
  await assert.rejects(client.chat.completions.create({ ...base, model: 'no-such-model' }), (e) => {
    assert.ok(e instanceof NotFoundError, `got ${e}`);
    assert.equal(e.code, 'unknown_model');
    assert.equal(e.type, 'invalid_request_error');
    return true;
  });
  // 413 body over 8 MiB.
  const huge = 'a'.repeat(9 * 1024 * 1024);
  await assert.rejects(
    client.chat.completions.create({ ...base, messages: [{ role: 'user', content: huge }] }), (e) => {
      assert.ok(e instanceof APIError, `got ${e}`);
      assert.equal(e.status, 413, `status ${e.status}: ${e.message}`);
      assert.equal(e.type, 'invalid_request_error');
      return true;
    });
  // 400 for a JSON schema keyword structured output does not support, naming it.
  await assert.rejects(client.chat.completions.create({
    ...base,
    response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object', not: { type: 'null' } } } },
  }), (e) => {
    assert.ok(e instanceof BadRequestError, `got ${e}`);
    assert.equal(e.status, 400);
    assert.equal(e.type, 'invalid_request_error');
    assert.match(e.message, /'not'/);
    return true;
  });
  // A supported schema: the content parses and has the required field.
  const js = await client.chat.completions.create({
    ...base, max_tokens: 64, temperature: 0,
    response_format: { type: 'json_schema', json_schema: { name: 'p', strict: true, schema: {
      type: 'object', properties: { n: { type: 'integer', minimum: 0, maximum: 99 } },
      required: ['n'], additionalProperties: false } } },
  });
  assert.equal(js.choices[0].finish_reason, 'stop', `content ${js.choices[0].message.content}`);
  const doc = JSON.parse(js.choices[0].message.content);
  assert.ok(Number.isInteger(doc.n) && doc.n >= 0 && doc.n <= 99, `got ${js.choices[0].message.content}`);
  assert.deepEqual(Object.keys(doc), ['n']);
  // The server still serves after all of them.
  const r = await client.chat.completions.create({ ...base, max_tokens: chat.max_tokens, temperature: 0 });
  assert.equal(r.choices[0].message.content, chat.text);
});

test('abort mid-stream: request cancelled, KV blocks back to 0 within 1 s', async () => {
  const before = await metrics();
  const endedEarly = (m) => sumMatching(m, 'cortex_requests_total{', (k) => /reason="(cancelled|client_gone)"/.test(k));
  const ac = new AbortController();
  const stream = await client.chat.completions.create({
    model, messages: chat.messages, max_tokens: ref.n_ctx, temperature: 0, ignore_eos: true, n: 8, stream: true,
  }, { signal: ac.signal });
  let chunks = 0;
  let abortedAt = 0;
  let kvAtAbort = 0;
  let finished = false;
  try {
    // After an abort the SDK's iterator ends quietly or throws APIUserAbortError.
    for await (const chunk of stream) {
      if (chunk.choices.some((c) => c.finish_reason)) finished = true;
      if (chunk.choices.some((c) => c.delta?.content) && ++chunks === 2) {
        kvAtAbort = (await metrics()).cortex_kv_blocks_used;
        abortedAt = performance.now();
        ac.abort();
      }
    }
  } catch (e) {
    if (!(e instanceof APIUserAbortError)) throw e;
  }
  assert.ok(!finished, 'no choice finished before the abort');
  assert.ok(abortedAt > 0, 'the stream produced tokens before the abort');
  assert.ok(kvAtAbort > 0, 'KV blocks were in use mid-stream');
  let m;
  for (;;) {
    m = await metrics();
    if (m.cortex_kv_blocks_used === 0 && endedEarly(m) > endedEarly(before)) break;
    assert.ok(performance.now() - abortedAt < 1000,
      `1 s after the abort: kv_blocks_used ${m.cortex_kv_blocks_used}, cancelled+client_gone ${endedEarly(m)}`);
    await new Promise((r) => setTimeout(r, 10));
  }
  const ms = performance.now() - abortedAt;
  console.log(`# abort: KV blocks ${kvAtAbort} -> 0 and request ended in ${ms.toFixed(0)} ms`);
  // It did not run to its end: no request finished by length meanwhile.
  const lengthOf = (x) => sumMatching(x, 'cortex_requests_total{', (k) => k.includes('reason="length"'));
  assert.equal(lengthOf(m), lengthOf(before), 'the aborted request was cancelled, not run to max_tokens');
});
