// The OpenAI Node SDK against a cortexd started with --max-running 1
// --max-waiting 1 (tests/e2e/test_openai_sdk.py): a request beyond the queue
// is RateLimitError (429, Retry-After), and the SDK's own retry, waiting
// Retry-After, gets through once the queue has emptied.
// Environment: CORTEX_OPENAI_BASE_URL (http://127.0.0.1:PORT/v1).
import { test } from 'node:test';
import assert from 'node:assert/strict';

import OpenAI, { RateLimitError } from 'openai';

const baseURL = process.env.CORTEX_OPENAI_BASE_URL;
if (!baseURL) throw new Error('set CORTEX_OPENAI_BASE_URL (tests/e2e/test_openai_sdk.py does)');
const client = new OpenAI({ baseURL, apiKey: 'unused', maxRetries: 0, timeout: 30_000 });
const messages = [{ role: 'user', content: 'Once upon a time' }];

test('overloaded: RateLimitError with Retry-After; a retrying client gets through after it', async () => {
  const ac = new AbortController();
  // One request runs (a long stream), one waits, the third is over the queue.
  const running = await client.chat.completions.create(
    { messages, max_tokens: 1900, ignore_eos: true, stream: true }, { signal: ac.signal });
  // Its first content chunk: it is running (the role chunk comes at acceptance, maybe still queued).
  // Not `for await ... break`: leaving the loop would close the stream.
  const it = running[Symbol.asyncIterator]();
  for (let r = await it.next(); !r.done && !r.value.choices[0]?.delta?.content; r = await it.next());
  let waitingError = null;
  const waiting = client.chat.completions.create({ messages, max_tokens: 4 }, { signal: ac.signal })
    .catch((e) => { waitingError = e; });
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(waitingError, null, 'the second request waits');
  await assert.rejects(client.chat.completions.create({ messages, max_tokens: 4 }), (e) => {
    assert.ok(e instanceof RateLimitError, `got ${e}`);
    assert.equal(e.status, 429);
    assert.equal(e.type, 'rate_limit_error');
    assert.equal(e.code, 'overloaded');
    assert.ok(Number(e.headers.get('retry-after')) >= 1, 'Retry-After in seconds');
    return true;
  });
  // The SDK retries a 429 after Retry-After (1 s); meanwhile the queue empties.
  const retrying = new OpenAI({ baseURL, apiKey: 'unused', maxRetries: 3, timeout: 30_000 });
  const t0 = performance.now();
  const later = retrying.chat.completions.create({ messages, max_tokens: 4 });
  await new Promise((r) => setTimeout(r, 200));
  ac.abort();
  await waiting;
  const r = await later;
  assert.equal(r.choices[0].finish_reason, 'length');
  assert.ok(performance.now() - t0 >= 900, 'it got through on a retry after Retry-After');
});
