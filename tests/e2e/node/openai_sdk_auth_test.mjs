// The official OpenAI Node SDK against a cortexd started with --auth
// (../shared/docs/auth.md): the SDK's apiKey is the Bearer secret.
//
// Run by tests/e2e/test_auth_sdk.py, which starts cortexd and writes the
// reference; environment:
//   CORTEX_OPENAI_BASE_URL  http://127.0.0.1:PORT/v1
//   CORTEX_E2E_REFERENCE    a JSON file: the model id; the secrets of a key
//                           of a tier capping max_tokens (`capped`) and of
//                           one limiting requests_per_minute (`slow`) and
//                           those limits, and of a key of a tier with few
//                           tokens_per_minute (`lean`); the wire path's greedy answer to
//                           a chat asked with the capped key; llama.cpp's
//                           golden embedding of one text.
// Usage: node --test tests/e2e/node/openai_sdk_auth_test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

import OpenAI, { AuthenticationError, PermissionDeniedError, RateLimitError } from 'openai';

const baseURL = process.env.CORTEX_OPENAI_BASE_URL;
const refPath = process.env.CORTEX_E2E_REFERENCE;
if (!baseURL || !refPath) {
  throw new Error('set CORTEX_OPENAI_BASE_URL and CORTEX_E2E_REFERENCE (tests/e2e/test_auth_sdk.py does)');
}
const ref = JSON.parse(readFileSync(refPath, 'utf8'));
const model = ref.model;
const chat = ref.chat;
// No retries unless a test asks for the SDK's own: a retry would hide what the server did.
const sdk = (apiKey, options = {}) => new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 30_000, ...options });
const capped = sdk(ref.keys.capped);
const request = { model, messages: chat.messages, max_tokens: chat.max_tokens, temperature: 0 };

// An assert.rejects predicate: the error is `cls` with this status, OpenAI type and code.
const apiError = (cls, status, type, code, also = () => {}) => (e) => {
  assert.ok(e instanceof cls, `expected ${cls.name}, got ${e}`);
  assert.equal(e.status, status);
  assert.equal(e.type, type);
  assert.equal(e.code, code);
  also(e);
  return true;
};

test('the right apiKey: a chat completion and a streamed one give the wire path\'s answer', async () => {
  const r = await capped.chat.completions.create(request);
  assert.equal(r.choices[0].message.content, chat.text);
  assert.equal(r.choices[0].finish_reason, chat.finish);
  assert.equal(r.usage.prompt_tokens, chat.prompt_tokens);
  assert.equal(r.usage.completion_tokens, chat.completion_tokens);

  const stream = await capped.chat.completions.create({ ...request, stream: true, stream_options: { include_usage: true } });
  let text = '';
  const finish = [];
  let usage = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      text += c.delta.content ?? '';
      if (c.finish_reason) finish.push(c.finish_reason);
    }
  }
  assert.equal(text, chat.text);
  assert.deepEqual(finish, [chat.finish]);
  assert.equal(usage.completion_tokens, chat.completion_tokens);
});

test('a wrong apiKey: AuthenticationError (401) on every endpoint, the key never echoed', async () => {
  const wrongKeys = ['cs-' + 'A'.repeat(43), ref.keys.capped.slice(0, -1), ''];
  for (const key of wrongKeys) {
    const wrong = sdk(key);
    const check = apiError(AuthenticationError, 401, 'authentication_error', 'unauthenticated', (e) => {
      assert.equal(e.headers.get('www-authenticate'), 'Bearer');
      if (key) assert.ok(!e.message.includes(key), 'the secret is not echoed');
    });
    await assert.rejects(wrong.chat.completions.create(request), check);
    await assert.rejects(wrong.chat.completions.create({ ...request, stream: true }), check);
    await assert.rejects(wrong.embeddings.create({ model, input: 'x' }), check);
    await assert.rejects(wrong.models.list(), check);
  }
  // The SDK does not retry a 401 by default either: one attempt, refused at once.
  const attempts = [];
  const counting = sdk('cs-wrong', {
    maxRetries: 2,
    fetch: async (url, init) => { attempts.push(url); return fetch(url, init); },
  });
  await assert.rejects(counting.chat.completions.create(request), AuthenticationError);
  assert.equal(attempts.length, 1);
});

test('over the tier\'s max_tokens: PermissionDeniedError (403), streamed or not', async () => {
  const over = ref.max_tokens_cap + 1;
  const check = apiError(PermissionDeniedError, 403, 'permission_error', 'forbidden', (e) => {
    assert.match(e.message, new RegExp(`max_tokens ${over} is above the cap`));
  });
  await assert.rejects(capped.chat.completions.create({ ...request, max_tokens: over }), check);
  await assert.rejects(capped.chat.completions.create({ ...request, max_tokens: over, stream: true }), check);
  // The newer field is held to the same cap.
  const { max_tokens: _, ...newer } = request;
  await assert.rejects(capped.chat.completions.create({ ...newer, max_completion_tokens: over }), check);
  // At the cap it is admitted.
  const r = await capped.chat.completions.create({ ...request, max_tokens: ref.max_tokens_cap, ignore_eos: true });
  assert.equal(r.usage.completion_tokens, ref.max_tokens_cap);
});

test('over requests_per_minute: RateLimitError (429) with Retry-After; the SDK\'s default retries honour it', async () => {
  const slow = sdk(ref.keys.slow);
  const small = { ...request, max_tokens: 1 };
  const t0 = performance.now();
  let admitted = 0;
  let refused = null;
  while (refused === null) {
    try {
      await slow.chat.completions.create(small);
      admitted++;
      assert.ok(admitted <= 2 * ref.requests_per_minute, 'the limit never applied');
    } catch (e) {
      refused = e;
    }
  }
  // A fresh key bursts a minute's worth, plus what refilled meanwhile (one per 60/rpm s).
  const refilled = Math.floor((performance.now() - t0) / 1000 / (60 / ref.requests_per_minute));
  assert.ok(admitted >= ref.requests_per_minute && admitted <= ref.requests_per_minute + refilled + 1,
    `${admitted} admitted in the burst`);
  apiError(RateLimitError, 429, 'rate_limit_error', 'rate_limited')(refused);
  const retryAfter = Number(refused.headers.get('retry-after'));
  assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60 / ref.requests_per_minute,
    `Retry-After ${refused.headers.get('retry-after')}: whole seconds, at most one refill period`);

  // The same call with the SDK's default retries (2): it waits Retry-After and gets through. Its
  // own backoff (0.5 s then 1 s) would not: the bucket needs almost a whole refill period.
  const attempts = [];
  const retrying = new OpenAI({
    baseURL, apiKey: ref.keys.slow, timeout: 30_000,
    fetch: async (url, init) => {
      const r = await fetch(url, init);
      attempts.push({ at: performance.now(), status: r.status, retryAfter: r.headers.get('retry-after') });
      return r;
    },
  });
  // Should the bucket have refilled between the refusal above and this call (the burst took
  // long enough for refills to make the wait short), that call gets through at once and empties
  // the bucket afresh; the next one then waits a whole refill period.
  for (let round = 0; round < 3 && attempts.length < 2; round++) {
    attempts.length = 0;
    const r = await retrying.chat.completions.create(small);
    assert.equal(r.choices[0].finish_reason, 'length');
  }
  assert.ok(attempts.length >= 2, `the first attempt was refused: ${JSON.stringify(attempts)}`);
  assert.equal(attempts.at(-1).status, 200);
  for (let i = 0; i + 1 < attempts.length; i++) {
    assert.equal(attempts[i].status, 429);
    const waited = attempts[i + 1].at - attempts[i].at;
    assert.ok(waited >= Number(attempts[i].retryAfter) * 1000 - 50,
      `attempt ${i + 1} came ${waited.toFixed(0)} ms after a Retry-After of ${attempts[i].retryAfter} s`);
  }
});

test('embeddings with the key equal the golden (llama.cpp) within 1e-4', async () => {
  const g = ref.embedding;  // {text, ids, embedding}
  // The lean key's tier allows fewer tokens a minute than a generation's default max_tokens:
  // an embedding generates nothing, so only its prompt counts.
  for (const client of [capped, sdk(ref.keys.lean)]) {
    const r = await client.embeddings.create({ model, input: g.text, encoding_format: 'float' });
    assert.equal(r.data.length, 1);
    const e = r.data[0].embedding;
    assert.equal(e.length, g.embedding.length);
    const worst = Math.max(...e.map((v, k) => Math.abs(v - g.embedding[k])));
    assert.ok(worst < 1e-4, `max abs diff ${worst}`);
    assert.equal(r.usage.prompt_tokens, g.ids.length);
  }
});
