// The agents' APIs through their official clients against a real cortexd
// (issue 27 items 5 and 6): OpenAI's Responses API with the `openai` SDK
// (responses.create and .stream), Anthropic's Messages API with
// `@anthropic-ai/sdk` (messages.create, .stream and countTokens), and an
// agent loop with `@openai/agents` over the Responses API.
//
// Run by tests/e2e/test_agents_api.py, which starts cortexd (stories260K,
// the Qwen3 template) and validates what this script writes; environment:
//   CORTEX_OPENAI_BASE_URL  http://127.0.0.1:PORT/v1
//   CORTEX_AGENTS_SPEC      a JSON file: {model, tool: {name, description,
//                           parameters}, format_schema, think_grammar}
//   CORTEX_AGENTS_OUT       where to write, per case, the calls and texts the
//                           clients assembled: {case: {...}}
// Python validates every call's arguments and every json_schema answer with
// python3-jsonschema; here the SDKs' own assembly and types are checked.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';

import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { Agent, run, tool, setDefaultOpenAIClient, setOpenAIAPI, setTracingDisabled } from '@openai/agents';
import { z } from 'zod';

const baseURL = process.env.CORTEX_OPENAI_BASE_URL;
const spec = JSON.parse(readFileSync(process.env.CORTEX_AGENTS_SPEC, 'utf8'));
const results = {};
after(() => writeFileSync(process.env.CORTEX_AGENTS_OUT, JSON.stringify(results, null, 1)));

const openai = new OpenAI({ baseURL, apiKey: 'unused', maxRetries: 0, timeout: 60_000 });
// The Anthropic SDK appends /v1/messages to its base URL.
const anthropic = new Anthropic({ baseURL: baseURL.replace(/\/v1$/, ''), apiKey: 'unused', maxRetries: 0, timeout: 60_000 });

const model = spec.model;
const { name: toolName, description: toolDescription, parameters: toolSchema } = spec.tool;
const responsesTool = { type: 'function', name: toolName, description: toolDescription, parameters: toolSchema, strict: true };
const anthropicTool = { name: toolName, description: toolDescription, input_schema: toolSchema };
const question = 'Once upon a time, what was the weather in Paris?';

// The text of a response's message items (finalResponse() of a stream has
// no output_text convenience field; responses.create has).
function textOf(r) {
  return r.output.filter((o) => o.type === 'message').flatMap((o) => o.content).map((c) => c.text).join('');
}

// Events of a Responses stream: types in order, sequence numbers 0, 1, 2...
async function collectResponseEvents(stream) {
  const types = [];
  let expected = 0;
  for await (const ev of stream) {
    assert.equal(ev.sequence_number, expected++, `sequence_number of ${ev.type}`);
    types.push(ev.type);
  }
  return types;
}

// ---------------------------------------------------------------- Responses

test('responses.create: text', async () => {
  const r = await openai.responses.create({ model, input: question, instructions: 'Tell a story.', max_output_tokens: 24, temperature: 0 });
  assert.equal(r.object, 'response');
  assert.ok(['completed', 'incomplete'].includes(r.status), r.status);
  assert.equal(r.output[0].type, 'message');
  assert.ok(r.output_text.length > 0, 'the SDK assembles output_text');
  assert.ok(r.usage.input_tokens > 0 && r.usage.output_tokens > 0);
  assert.equal(r.usage.total_tokens, r.usage.input_tokens + r.usage.output_tokens);
  if (r.status === 'incomplete') assert.equal(r.incomplete_details.reason, 'max_output_tokens');
  results.responses_text = { status: r.status, text: r.output_text };
});

test('responses.stream: text, the typed event sequence', async () => {
  const stream = openai.responses.stream({ model, input: question, max_output_tokens: 12, temperature: 0 });
  let deltas = '';
  stream.on('response.output_text.delta', (ev) => { deltas += ev.delta; });
  const types = await collectResponseEvents(stream);
  const final = await stream.finalResponse();
  assert.deepEqual(types.slice(0, 4), ['response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added']);
  assert.ok(types.includes('response.output_text.delta'));
  assert.deepEqual(types.slice(-4), ['response.output_text.done', 'response.content_part.done', 'response.output_item.done',
    final.status === 'completed' ? 'response.completed' : 'response.incomplete']);
  assert.equal(textOf(final), deltas);
  assert.ok(deltas.length > 0);
  results.responses_stream_text = { status: final.status, text: textOf(final) };
});

test('responses: a function tool round trip (function_call, function_call_output)', async () => {
  const first = await openai.responses.create({
    model, input: question, tools: [responsesTool], tool_choice: { type: 'function', name: toolName }, temperature: 1, max_output_tokens: 400,
  });
  const calls = first.output.filter((o) => o.type === 'function_call');
  assert.equal(calls.length, 1);
  assert.equal(calls[0].name, toolName);
  assert.ok(calls[0].call_id);
  const args = JSON.parse(calls[0].arguments);
  const second = await openai.responses.create({
    model, tools: [responsesTool], tool_choice: 'none', max_output_tokens: 16, temperature: 0,
    input: [{ role: 'user', content: question }, ...first.output,
      { type: 'function_call_output', call_id: calls[0].call_id, output: JSON.stringify({ sky: 'sunny', city: args.city }) }],
  });
  assert.equal(second.output.filter((o) => o.type === 'function_call').length, 0);
  assert.ok(second.output_text.length > 0);
  const alone = await openai.responses.create({ model, tools: [responsesTool], tool_choice: 'none', max_output_tokens: 1, input: question });
  assert.ok(second.usage.input_tokens > alone.usage.input_tokens + 10, 'the call and its output are in the prompt');
  results.responses_tool_round_trip = { call: { name: calls[0].name, arguments: calls[0].arguments }, answer: second.output_text };
});

test('responses.stream: a required call, arguments streamed', async () => {
  const stream = openai.responses.stream({ model, input: question, tools: [responsesTool], tool_choice: 'required', temperature: 1, max_output_tokens: 400 });
  let argDeltas = '';
  stream.on('response.function_call_arguments.delta', (ev) => { argDeltas += ev.delta; });
  const types = await collectResponseEvents(stream);
  const final = await stream.finalResponse();
  const calls = final.output.filter((o) => o.type === 'function_call');
  assert.ok(calls.length >= 1);
  assert.equal(calls.map((c) => c.arguments).join(''), argDeltas);
  assert.ok(types.includes('response.function_call_arguments.done'));
  assert.equal(types.at(-1), 'response.completed');
  results.responses_stream_required = { calls: calls.map((c) => ({ name: c.name, arguments: c.arguments })) };
});

test('responses: text.format json_schema, created and streamed', async () => {
  const text = { format: { type: 'json_schema', name: 'city_report', schema: spec.format_schema, strict: true } };
  const r = await openai.responses.create({ model, input: question, text, temperature: 1, max_output_tokens: 400 });
  assert.equal(r.status, 'completed');
  JSON.parse(r.output_text);
  const stream = openai.responses.stream({ model, input: question, text, temperature: 1, seed: 5, max_output_tokens: 400 });
  const final = await stream.finalResponse();
  assert.equal(final.status, 'completed');
  results.responses_json_schema = { texts: [r.output_text, textOf(final)] };
});

test('responses: a reasoning item, apart from the message', async () => {
  const body = { model, input: question, max_output_tokens: 80, temperature: 1, seed: 3, grammar: spec.think_grammar };
  const r = await openai.responses.create(body);
  assert.deepEqual(r.output.map((o) => o.type), ['reasoning', 'message']);
  assert.ok(r.output[0].content[0].text.trim().length > 0);
  assert.ok(r.output_text.length > 0 && !r.output_text.includes('<think>') && !r.output_text.includes('</think>'));
  const final = await openai.responses.stream(body).finalResponse();
  assert.deepEqual(final.output.map((o) => o.type), ['reasoning', 'message']);
  assert.equal(final.output[0].content[0].text, r.output[0].content[0].text, 'same seed, same reasoning');
});

test('responses: stateless requests are 400 naming the field', async () => {
  await assert.rejects(openai.responses.create({ model, input: 'x', previous_response_id: 'resp_1' }),
    (e) => e.status === 400 && e.param === 'previous_response_id');
  await assert.rejects(openai.responses.create({ model, input: 'x', store: true }), (e) => e.status === 400 && e.param === 'store');
});

// ---------------------------------------------------------------- Anthropic

test('messages.create: text', async () => {
  const m = await anthropic.messages.create({ model, max_tokens: 24, system: 'Tell a story.', messages: [{ role: 'user', content: question }], temperature: 0 });
  assert.equal(m.type, 'message');
  assert.equal(m.role, 'assistant');
  assert.equal(m.content[0].type, 'text');
  assert.ok(m.content[0].text.length > 0);
  assert.ok(['end_turn', 'max_tokens'].includes(m.stop_reason), m.stop_reason);
  assert.ok(m.usage.input_tokens > 0 && m.usage.output_tokens > 0);
  results.messages_text = { stop_reason: m.stop_reason, text: m.content[0].text };
});

test('messages.stream: text, the event sequence', async () => {
  const stream = anthropic.messages.stream({ model, max_tokens: 12, messages: [{ role: 'user', content: question }], temperature: 0 });
  const types = [];
  let text = '';
  stream.on('streamEvent', (ev) => types.push(ev.type));
  stream.on('text', (t) => { text += t; });
  const final = await stream.finalMessage();
  assert.deepEqual(types.slice(0, 2), ['message_start', 'content_block_start']);
  assert.deepEqual(types.slice(-3), ['content_block_stop', 'message_delta', 'message_stop']);
  assert.equal(final.content[0].text, text);
  assert.ok(text.length > 0);
  assert.equal(final.stop_reason, 'max_tokens');
  assert.equal(final.usage.output_tokens, 12);
});

test('messages: stop_sequences end with stop_sequence', async () => {
  const free = await anthropic.messages.create({ model, max_tokens: 40, messages: [{ role: 'user', content: question }], temperature: 0 });
  const words = free.content[0].text.trim().split(/\s+/);
  assert.ok(words.length > 3);
  const stop = words[2];
  const m = await anthropic.messages.create({ model, max_tokens: 40, messages: [{ role: 'user', content: question }], temperature: 0, stop_sequences: [stop] });
  assert.equal(m.stop_reason, 'stop_sequence');
  assert.equal(m.stop_sequence, stop);
  assert.ok(!m.content[0].text.includes(stop));
});

test('messages: a tool_use / tool_result round trip', async () => {
  const messages = [{ role: 'user', content: question }];
  const first = await anthropic.messages.create({
    model, max_tokens: 400, messages, tools: [anthropicTool], tool_choice: { type: 'tool', name: toolName }, temperature: 1,
  });
  assert.equal(first.stop_reason, 'tool_use');
  const uses = first.content.filter((b) => b.type === 'tool_use');
  assert.equal(uses.length, 1);
  assert.equal(uses[0].name, toolName);
  assert.equal(typeof uses[0].input, 'object');
  const second = await anthropic.messages.create({
    model, max_tokens: 16, tools: [anthropicTool], tool_choice: { type: 'none' }, temperature: 0,
    messages: [...messages, { role: 'assistant', content: first.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: uses[0].id, content: 'sunny' }] }],
  });
  assert.equal(second.content.filter((b) => b.type === 'tool_use').length, 0);
  assert.ok(second.content[0].text.length > 0);
  const alone = await anthropic.messages.countTokens({ model, messages, tools: [anthropicTool], tool_choice: { type: 'none' } });
  assert.ok(second.usage.input_tokens > alone.input_tokens + 10, 'the call and its result are in the prompt');
  results.messages_tool_round_trip = { call: { name: uses[0].name, arguments: JSON.stringify(uses[0].input) } };
});

test('messages.stream: tool_choice any, input_json_delta assembled by the SDK', async () => {
  const stream = anthropic.messages.stream({
    model, max_tokens: 400, messages: [{ role: 'user', content: question }], tools: [anthropicTool], tool_choice: { type: 'any' }, temperature: 1,
  });
  const partial = {};  // by block index: parallel calls are separate blocks
  stream.on('streamEvent', (ev) => {
    if (ev.type === 'content_block_delta' && ev.delta.type === 'input_json_delta') partial[ev.index] = (partial[ev.index] ?? '') + ev.delta.partial_json;
  });
  const final = await stream.finalMessage();
  assert.equal(final.stop_reason, 'tool_use');
  const uses = final.content.filter((b) => b.type === 'tool_use');
  assert.ok(uses.length >= 1);
  final.content.forEach((b, i) => { if (b.type === 'tool_use') assert.deepEqual(JSON.parse(partial[i]), b.input); });
  results.messages_stream_any = { calls: uses.map((u) => ({ name: u.name, arguments: JSON.stringify(u.input) })) };
});

test('messages: a thinking block (Qwen3 template), created and streamed', async () => {
  const body = { model, max_tokens: 80, messages: [{ role: 'user', content: question }], temperature: 1, seed: 3,
    thinking: { type: 'enabled', budget_tokens: 60 }, grammar: spec.think_grammar };
  const m = await anthropic.messages.create(body);
  assert.deepEqual(m.content.map((b) => b.type), ['thinking', 'text']);
  assert.ok(m.content[0].thinking.trim().length > 0);
  assert.ok(!m.content[1].text.includes('</think>'));
  const stream = anthropic.messages.stream(body);
  let thinking = '';
  stream.on('thinking', (delta) => { thinking += delta; });
  const final = await stream.finalMessage();
  assert.deepEqual(final.content.map((b) => b.type), ['thinking', 'text']);
  assert.equal(final.content[0].thinking, thinking);
  assert.equal(thinking, m.content[0].thinking, 'same seed, same thinking');
});

test('messages.countTokens equals usage.input_tokens', async () => {
  const body = { model, system: 'Be brief.', messages: [{ role: 'user', content: question }], tools: [anthropicTool] };
  const counted = await anthropic.messages.countTokens(body);
  const m = await anthropic.messages.create({ ...body, max_tokens: 1, temperature: 0 });
  assert.ok(counted.input_tokens > 10);
  assert.equal(counted.input_tokens, m.usage.input_tokens);
  results.count_tokens = { counted: counted.input_tokens, usage: m.usage.input_tokens };
});

test('messages: errors are Anthropic-shaped', async () => {
  await assert.rejects(anthropic.messages.create({ model: 'claude-none', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }), (e) => {
    assert.equal(e.status, 404);
    assert.equal(e.error.type, 'error');
    assert.equal(e.error.error.type, 'not_found_error');
    assert.match(e.error.error.message, /not loaded/);
    return true;
  });
  await assert.rejects(anthropic.messages.create({ model, max_tokens: 5, messages: [{ role: 'user', content: 'x' }], tool_choice: { type: 'any' } }), (e) => {
    assert.equal(e.status, 400);
    assert.equal(e.error.error.type, 'invalid_request_error');
    assert.match(e.error.error.message, /tool_choice/);
    return true;
  });
});

// ---------------------------------------------------------------- Agents SDK

test('@openai/agents: a run calls the tool once, then answers', async () => {
  setTracingDisabled(true);
  setDefaultOpenAIClient(openai);
  setOpenAIAPI('responses');
  const cities = [];
  const getWeather = tool({
    name: toolName,
    description: toolDescription,
    parameters: z.object({ city: z.string().max(12), days: z.number().int().min(1).max(7) }),
    execute: async ({ city, days }) => {
      cities.push(city);
      return `sunny in ${city} for ${days} days`;
    },
  });
  // toolChoice names the tool for the first turn; resetToolChoice (the
  // default) sets it back to auto once the tool ran, so the model answers.
  const agent = new Agent({
    name: 'Weather', instructions: 'Answer about the weather.', model, tools: [getWeather],
    modelSettings: { toolChoice: toolName, temperature: 0, maxTokens: 200 },
  });
  const result = await run(agent, question, { maxTurns: 4 });
  assert.equal(cities.length, 1, 'the tool ran exactly once');
  assert.equal(typeof result.finalOutput, 'string');
  assert.ok(result.finalOutput.length > 0);
  const kinds = result.newItems.map((i) => i.type);
  assert.deepEqual(kinds.filter((k) => k !== 'reasoning_item'), ['tool_call_item', 'tool_call_output_item', 'message_output_item']);
  const call = result.newItems.find((i) => i.type === 'tool_call_item').rawItem;
  results.agents_run = { call: { name: call.name, arguments: call.arguments }, final: result.finalOutput };
});
