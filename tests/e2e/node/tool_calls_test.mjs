// Tool calls through the official OpenAI Node SDK (and, when installed, the
// Vercel AI SDK and LangChain.js) against a real cortexd (issue 27).
//
// Run by tests/e2e/test_tool_calls.py, which starts cortexd with one chat
// template and checks what this script writes; environment:
//   CORTEX_OPENAI_BASE_URL  http://127.0.0.1:PORT/v1
//   CORTEX_TOOLS_SPEC       a JSON file: {model, tools, messages}
//   CORTEX_TOOLS_OUT        where to write the calls each client got:
//                           {case: {finish_reason, content, tool_calls: [{id, name, arguments}]}}
// The Python side validates every call's arguments against the tool's
// schema (python3-jsonschema); here the SDKs' own assembly is what is tested.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';

import OpenAI from 'openai';

const baseURL = process.env.CORTEX_OPENAI_BASE_URL;
const spec = JSON.parse(readFileSync(process.env.CORTEX_TOOLS_SPEC, 'utf8'));
const results = {};
after(() => writeFileSync(process.env.CORTEX_TOOLS_OUT, JSON.stringify(results, null, 1)));

const client = new OpenAI({ baseURL, apiKey: 'unused', maxRetries: 0, timeout: 60_000 });
const base = { model: spec.model, messages: spec.messages, tools: spec.tools, max_tokens: 1000, temperature: 1, seed: 7 };

function record(name, msg, finish) {
  results[name] = {
    finish_reason: finish,
    content: msg.content ?? null,
    reasoning_content: msg.reasoning_content ?? null,
    tool_calls: (msg.tool_calls ?? []).map((c) => ({ id: c.id, type: c.type, name: c.function.name, arguments: c.function.arguments })),
  };
}

test('openai: tool_choice required', async () => {
  const r = await client.chat.completions.create({ ...base, tool_choice: 'required' });
  record('openai_required', r.choices[0].message, r.choices[0].finish_reason);
  assert.equal(r.choices[0].finish_reason, 'tool_calls');
  assert.ok(r.choices[0].message.tool_calls.length >= 1);
});

test('openai: named tool_choice, parallel_tool_calls false', async () => {
  const name = spec.tools[1].function.name;
  const r = await client.chat.completions.create({
    ...base, tool_choice: { type: 'function', function: { name } }, parallel_tool_calls: false });
  record('openai_named', r.choices[0].message, r.choices[0].finish_reason);
  assert.equal(r.choices[0].message.tool_calls.length, 1);
  assert.equal(r.choices[0].message.tool_calls[0].function.name, name);
});

test('openai: streamed required call, assembled by the SDK stream helper', async () => {
  const stream = client.chat.completions.stream({ ...base, tool_choice: 'required', seed: 11 });
  let sawIndex = false;
  stream.on('chunk', (c) => { if (c.choices[0]?.delta?.tool_calls?.[0]?.index !== undefined) sawIndex = true; });
  const final = await stream.finalChatCompletion();
  record('openai_stream_required', final.choices[0].message, final.choices[0].finish_reason);
  assert.ok(sawIndex);
  assert.equal(final.choices[0].finish_reason, 'tool_calls');
  assert.ok(final.choices[0].message.tool_calls.length >= 1);
});

test('openai: streamed named call, raw deltas', async () => {
  const name = spec.tools[0].function.name;
  const stream = await client.chat.completions.create({
    ...base, stream: true, seed: 12, tool_choice: { type: 'function', function: { name } } });
  const calls = [];
  let finish = null;
  let content = '';
  for await (const chunk of stream) {
    const ch = chunk.choices[0];
    if (!ch) continue;
    if (ch.delta?.content) content += ch.delta.content;
    for (const d of ch.delta?.tool_calls ?? []) {
      if (!calls[d.index]) calls[d.index] = { id: d.id, function: { name: d.function?.name ?? '', arguments: '' } };
      calls[d.index].function.arguments += d.function?.arguments ?? '';
    }
    if (ch.finish_reason) finish = ch.finish_reason;
  }
  record('openai_stream_named', { content, tool_calls: calls.map((c) => ({ ...c, type: 'function' })) }, finish);
  assert.equal(finish, 'tool_calls');
  assert.equal(calls.length, 1);
  assert.ok(calls[0].id);
  assert.equal(calls[0].function.name, name);
});

test('openai: auto with no opener written gives text', async () => {
  const r = await client.chat.completions.create({ ...base, tool_choice: 'auto', max_tokens: 24, temperature: 0 });
  record('openai_auto', r.choices[0].message, r.choices[0].finish_reason);
  assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason));
  assert.equal(r.choices[0].message.tool_calls, undefined);
  assert.equal(typeof r.choices[0].message.content, 'string');
});

// The Vercel AI SDK and LangChain.js, when tests/e2e/node has them.
async function optional(name) {
  try { return await import(name); } catch { return null; }
}

test('vercel ai sdk: generateText with toolChoice required', async (t) => {
  const ai = await optional('ai');
  const compat = await optional('@ai-sdk/openai-compatible');
  if (!ai || !compat) return t.skip('ai / @ai-sdk/openai-compatible not installed');
  const provider = compat.createOpenAICompatible({ name: 'cortex', baseURL, apiKey: 'unused' });
  const tools = {};
  for (const tool of spec.tools) {
    tools[tool.function.name] = ai.tool({
      description: tool.function.description, inputSchema: ai.jsonSchema(tool.function.parameters) });
  }
  for (const stream of [false, true]) {
    const args = { model: provider(spec.model), messages: spec.messages, tools, toolChoice: 'required',
                   maxOutputTokens: 1000, temperature: 1, seed: 5, maxRetries: 0 };
    let calls, finish;
    if (stream) {
      const r = ai.streamText(args);
      calls = await r.toolCalls;
      finish = await r.finishReason;
    } else {
      const r = await ai.generateText(args);
      calls = r.toolCalls;
      finish = r.finishReason;
    }
    results[stream ? 'vercel_stream_required' : 'vercel_required'] = {
      finish_reason: finish,
      tool_calls: calls.map((c) => ({ id: c.toolCallId, name: c.toolName, arguments: JSON.stringify(c.input ?? c.args) })),
    };
    assert.equal(finish, 'tool-calls');
    assert.ok(calls.length >= 1);
  }
});

test('langchain: bindTools with a forced tool', async (t) => {
  const lc = await optional('@langchain/openai');
  if (!lc) return t.skip('@langchain/openai not installed');
  const name = spec.tools[0].function.name;
  const llm = new lc.ChatOpenAI({ model: spec.model, apiKey: 'unused', configuration: { baseURL }, maxRetries: 0,
                                  maxTokens: 1000, temperature: 1 });
  const bound = llm.bindTools(spec.tools, { tool_choice: name });
  const msgs = spec.messages.map((m) => [m.role === 'user' ? 'human' : m.role, m.content]);
  const r = await bound.invoke(msgs);
  results.langchain_named = {
    tool_calls: r.tool_calls.map((c) => ({ id: c.id, name: c.name, arguments: JSON.stringify(c.args) })) };
  assert.equal(r.tool_calls.length, 1);
  assert.equal(r.tool_calls[0].name, name);
  let merged = null;
  for await (const chunk of await bound.stream(msgs)) merged = merged ? merged.concat(chunk) : chunk;
  results.langchain_stream_named = {
    tool_calls: merged.tool_calls.map((c) => ({ id: c.id, name: c.name, arguments: JSON.stringify(c.args) })) };
  assert.equal(merged.tool_calls.length, 1);
  assert.equal(merged.tool_calls[0].name, name);
});
