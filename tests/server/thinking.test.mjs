// A Thinking model (the tiny model with the Qwen3-VL-*-Thinking chat template) through the
// official OpenAI SDK: /v1/models and /props name the variant; reasoning comes back apart from
// the answer (message.reasoning_content, streamed as delta.reasoning_content before delta.content);
// reasoning_format / include_reasoning; a JSON schema constrains only the answer after </think>.
// The tiny model's random weights rarely close their reasoning by themselves: a schema with a
// small max_tokens makes the engine close it in time for the answer, which gives a split to test.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { MODEL_DIR, postJson, startServer } from './helpers.mjs';
import { makeThinkingModel } from './thinking_model.mjs';

let server;
let client;
const schema = {
  type: 'object',
  properties: { city: { type: 'string', enum: ['Paris', 'Oslo'] }, warm: { type: 'boolean' } },
  required: ['city', 'warm'], additionalProperties: false,
};
const request = (extra = {}) => ({
  model: 'tiny', messages: [{ role: 'user', content: 'Which city? Answer in JSON.' }],
  max_tokens: 40, temperature: 1, seed: 5,  // greedy, the tiny model only writes newlines
  response_format: { type: 'json_schema', json_schema: { name: 'answer', schema, strict: true } },
  ...extra,
});

before(async () => {
  server = await startServer([], { modelDir: makeThinkingModel(MODEL_DIR) });
  client = new OpenAI({ apiKey: 'none', baseURL: `${server.url}/v1`, maxRetries: 0 });
});

after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0);
});

test('/v1/models and /props name the Thinking variant', async () => {
  const models = await client.models.list();
  assert.equal(models.data[0].variant, 'Thinking');
  assert.equal(models.data[0].reasoning, true);
  const props = await (await fetch(`${server.url}/props`)).json();
  assert.equal(props.variant, 'Thinking');
  assert.equal(props.reasoning, true);
});

test('a schema constrains the answer after </think>; the reasoning is apart', async () => {
  const c = await client.chat.completions.create(request());
  const message = c.choices[0].message;
  assert.equal(c.choices[0].finish_reason, 'stop');
  assert.equal(typeof message.reasoning_content, 'string', JSON.stringify(message));
  assert.ok(message.reasoning_content.length > 10, message.reasoning_content);
  assert.ok(!message.reasoning_content.includes('</think>'));
  const answer = JSON.parse(message.content);
  assert.ok(['Paris', 'Oslo'].includes(answer.city), message.content);
  assert.equal(typeof answer.warm, 'boolean');
  assert.equal(c.usage.completion_tokens <= 40, true);
  const reasoningTokens = c.usage.completion_tokens_details.reasoning_tokens;
  assert.ok(reasoningTokens > 1 && reasoningTokens < c.usage.completion_tokens, JSON.stringify(c.usage));
  // The raw text holds the same reasoning, the end of thinking and the answer.
  const raw = await client.chat.completions.create(request({ reasoning_format: 'none' }));
  const text = raw.choices[0].message.content;
  assert.ok(!('reasoning_content' in raw.choices[0].message));
  const cut = text.indexOf('</think>');
  assert.ok(cut >= 0, text);
  assert.equal(text.slice(0, cut).trim(), message.reasoning_content);
  assert.equal(text.slice(cut + '</think>'.length).trim(), message.content);
  // vLLM's include_reasoning: false leaves it out.
  const omitted = await client.chat.completions.create(request({ include_reasoning: false }));
  assert.ok(!('reasoning_content' in omitted.choices[0].message));
  assert.equal(omitted.choices[0].message.content, message.content);
});

test('streamed: reasoning_content deltas, then content deltas, adding up to the same', async () => {
  const whole = (await client.chat.completions.create(request())).choices[0].message;
  const stream = await client.chat.completions.create(request({ stream: true }));
  let reasoning = '';
  let content = '';
  let finish = null;
  for await (const chunk of stream) {
    const choice = chunk.choices[0];
    if (!choice) continue;
    if (choice.delta.reasoning_content) {
      assert.equal(content, '', 'no reasoning after the answer began');
      reasoning += choice.delta.reasoning_content;
    }
    if (choice.delta.content) content += choice.delta.content;
    if (choice.finish_reason) finish = choice.finish_reason;
  }
  assert.equal(finish, 'stop');
  assert.equal(reasoning, whole.reasoning_content);
  assert.equal(content, whole.content);
  JSON.parse(content);
});

test('a required tool call is made in the answer, after the reasoning', async () => {
  const tools = [{ type: 'function', function: { name: 'get_weather', parameters: {
    type: 'object', properties: { city: { type: 'string', enum: ['Paris'] } }, required: ['city'],
    additionalProperties: false } } }];
  const body = { model: 'tiny', messages: [{ role: 'user', content: 'Weather in Paris?' }], tools,
    tool_choice: 'required', parallel_tool_calls: false, max_tokens: 120, temperature: 1, seed: 4 };
  const c = await client.chat.completions.create(body);
  const message = c.choices[0].message;
  assert.equal(c.choices[0].finish_reason, 'tool_calls', JSON.stringify(message));
  assert.equal(message.tool_calls.length, 1);
  assert.equal(message.tool_calls[0].function.name, 'get_weather');
  assert.deepEqual(JSON.parse(message.tool_calls[0].function.arguments), { city: 'Paris' });
  assert.ok(message.reasoning_content.length > 0);
  assert.ok(!message.reasoning_content.includes('<tool_call>'));
  // Streamed: reasoning deltas, then the call as a tool_calls delta.
  let reasoning = '';
  const calls = [];
  for await (const chunk of await client.chat.completions.create({ ...body, stream: true })) {
    const delta = chunk.choices[0]?.delta ?? {};
    if (delta.reasoning_content) {
      assert.equal(calls.length, 0);
      reasoning += delta.reasoning_content;
    }
    if (delta.tool_calls) calls.push(...delta.tool_calls);
  }
  assert.equal(reasoning, message.reasoning_content);
  assert.equal(calls[0].function.name, 'get_weather');
});

test('an answer cut inside its reasoning is all reasoning; content is null', async () => {
  const c = await client.chat.completions.create({
    model: 'tiny', messages: [{ role: 'user', content: 'Think.' }], max_tokens: 6, temperature: 1, seed: 2,
  });
  const message = c.choices[0].message;
  assert.equal(c.choices[0].finish_reason, 'length');
  const raw = await client.chat.completions.create({
    model: 'tiny', messages: [{ role: 'user', content: 'Think.' }], max_tokens: 6, temperature: 1, seed: 2,
    reasoning_format: 'none',
  });
  const text = raw.choices[0].message.content;
  assert.ok(!text.includes('</think>'), text);
  assert.equal(message.content, null);
  assert.ok(message.reasoning_content.length > 0);
  assert.equal(message.reasoning_content, text.trim());
});

test('earlier turns: reasoning_content is accepted on assistant messages only', async () => {
  const ok = await postJson(server, '/v1/chat/completions', {
    model: 'tiny', max_tokens: 1,
    messages: [{ role: 'user', content: 'a' },
      { role: 'assistant', content: 'b', reasoning_content: 'because' },
      { role: 'user', content: 'c' }],
  });
  assert.equal(ok.status, 200, ok.text);
  const bad = await postJson(server, '/v1/chat/completions', {
    model: 'tiny', max_tokens: 1, messages: [{ role: 'user', content: 'a', reasoning_content: 'x' }],
  });
  assert.equal(bad.status, 400);
  assert.equal(bad.json.error.param, 'messages[0].reasoning_content');
  const format = await postJson(server, '/v1/chat/completions', {
    model: 'tiny', max_tokens: 1, messages: [{ role: 'user', content: 'a' }],
    reasoning_format: 'deepseek-legacy',
  });
  assert.equal(format.status, 400);
  assert.equal(format.json.error.param, 'reasoning_format');
});

test('an Instruct model has no reasoning field; the Thinking prompt adds <think>\\n', async () => {
  const instruct = await startServer();
  try {
    const body = { model: 'tiny', max_tokens: 1, messages: [{ role: 'user', content: 'Hi' }] };
    const opened = (await postJson(server, '/tokenize', { content: '<think>\n' })).json.count;
    assert.equal(opened, 2);
    const thinking = (await postJson(server, '/v1/chat/completions', body)).json.usage;
    const plain = (await postJson(instruct, '/v1/chat/completions', body)).json.usage;
    assert.equal(thinking.prompt_tokens, plain.prompt_tokens + opened);
    const models = await (await fetch(`${instruct.url}/v1/models`)).json();
    assert.equal(models.data[0].variant, 'Instruct');
    assert.equal(models.data[0].reasoning, false);
    const r = await postJson(instruct, '/v1/chat/completions', {
      model: 'tiny', max_tokens: 3, temperature: 0, messages: [{ role: 'user', content: 'a' }],
      include_reasoning: true, reasoning_format: 'deepseek',
    });
    assert.equal(r.status, 200, r.text);
    assert.ok(!('reasoning_content' in r.json.choices[0].message));
    assert.ok(!('completion_tokens_details' in r.json.usage));
    assert.equal(typeof r.json.choices[0].message.content, 'string');
  } finally {
    await instruct.stop();
  }
});
