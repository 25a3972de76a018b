// The official OpenAI SDK as client: non-streaming, streaming with usage, an image request,
// models.list, and the API key.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startServer, imageDataUri, postJson, chatBody } from './helpers.mjs';

const API_KEY = 'sk-test-123';
let server;
let client;

before(async () => {
  server = await startServer(['--api-key', API_KEY, '--cors-origin', 'http://app.example']);
  client = new OpenAI({ apiKey: API_KEY, baseURL: `${server.url}/v1`, maxRetries: 0 });
});

after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0);
});

test('non-streaming completion', async () => {
  const completion = await client.chat.completions.create({
    model: 'qwen3vl-tiny-a',
    messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hello!' }],
    max_tokens: 5,
    temperature: 0,
  });
  assert.match(completion.id, /^chatcmpl-/);
  assert.equal(completion.object, 'chat.completion');
  assert.equal(typeof completion.created, 'number');
  assert.equal(completion.model, 'qwen3vl-tiny-a');
  assert.equal(completion.choices.length, 1);
  assert.equal(completion.choices[0].message.role, 'assistant');
  assert.equal(typeof completion.choices[0].message.content, 'string');
  assert.ok(['stop', 'length'].includes(completion.choices[0].finish_reason));
  assert.equal(completion.usage.completion_tokens, 5);  // the tiny model never says <|im_end|>
  assert.equal(completion.choices[0].finish_reason, 'length');
  assert.ok(completion.usage.prompt_tokens > 5);
  assert.equal(completion.usage.total_tokens,
    completion.usage.prompt_tokens + completion.usage.completion_tokens);
  assert.ok(completion.timings.prompt_ms >= 0);
  assert.ok(completion.timings.completion_tokens_per_second > 0);
});

test('streaming with usage', async () => {
  const stream = await client.chat.completions.create({
    model: 'qwen3vl-tiny-a',
    messages: [{ role: 'user', content: 'Count to three.' }],
    max_tokens: 6,
    stream: true,
    stream_options: { include_usage: true },
  });
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  assert.ok(chunks.length >= 4);
  for (const c of chunks) {
    assert.equal(c.object, 'chat.completion.chunk');
    assert.equal(c.id, chunks[0].id);
  }
  assert.equal(chunks[0].choices[0].delta.role, 'assistant');
  const finals = chunks.filter((c) => c.choices.length && c.choices[0].finish_reason);
  assert.equal(finals.length, 1);
  assert.equal(finals[0].choices[0].finish_reason, 'length');
  const last = chunks[chunks.length - 1];
  assert.deepEqual(last.choices, []);
  assert.equal(last.usage.completion_tokens, 6);
  assert.equal(last.usage.total_tokens, last.usage.prompt_tokens + 6);
  // Every chunk before the usage chunk carries usage: null.
  for (const c of chunks.slice(0, -1)) assert.equal(c.usage, null);
  const text = chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('');
  assert.ok(text.length > 0);
  // Non-streamed and streamed text agree under greedy decoding.
  const again = await client.chat.completions.create({
    model: 'x', messages: [{ role: 'user', content: 'Count to three.' }], max_tokens: 6,
  });
  assert.equal(again.choices[0].message.content, text);
});

test('image request (data URI)', async () => {
  const base = {
    model: 'qwen3vl-tiny-a',
    max_tokens: 3,
  };
  const textOnly = await client.chat.completions.create({
    ...base, messages: [{ role: 'user', content: 'What is in the image?' }],
  });
  const completion = await client.chat.completions.create({
    ...base,
    messages: [{
      role: 'user',
      content: [
        { type: 'image_url', image_url: { url: imageDataUri('a_ii_shapes_200x120.png') } },
        { type: 'text', text: 'What is in the image?' },
      ],
    }],
  });
  assert.equal(completion.usage.completion_tokens, 3);
  // 200x120 -> 77 image tokens with the default budget (see the golden case ii).
  assert.ok(completion.usage.prompt_tokens >= textOnly.usage.prompt_tokens + 77,
    `${completion.usage.prompt_tokens} vs ${textOnly.usage.prompt_tokens}`);
  assert.ok(completion.timings.image_ms > 0);
  const low = await client.chat.completions.create({
    ...base,
    messages: [{
      role: 'user',
      content: [{ type: 'image_url', image_url: { url: imageDataUri('a_iii_scene_640x480.jpg'), detail: 'low' } }],
    }],
  });
  assert.ok(low.timings.image_tokens <= 256, `low detail used ${low.timings.image_tokens} tokens`);
});

test('models.list', async () => {
  const models = await client.models.list();
  assert.equal(models.data.length, 1);
  assert.equal(models.data[0].id, 'qwen3vl-tiny-a');
  assert.equal(models.data[0].object, 'model');
  // What the model is and how it is stored and run (the page's model line): the tiny golden
  // model is a bf16 safetensors folder, run as q8 with a bf16 vision tower by default.
  const props = await (await fetch(`${server.url}/props`, { headers: { authorization: `Bearer ${API_KEY}` } })).json();
  for (const m of [models.data[0], props]) {
    assert.match(m.size, /^\d+M$/);
    assert.equal(m.size, `${Math.floor(m.parameters / 1e6)}M`);
    assert.equal(m.format, 'safetensors');
    assert.equal(m.file_type, 'BF16');
    assert.equal(m.vision_file_type, 'BF16');
    assert.equal(m.quant, 'q8');
    assert.equal(m.vision_quant, 'bf16');
  }
});

test('API key is required on /v1 and /tokenize, not on /health and /metrics', async () => {
  const wrong = new OpenAI({ apiKey: 'sk-wrong', baseURL: `${server.url}/v1`, maxRetries: 0 });
  await assert.rejects(wrong.models.list(), (e) => {
    assert.equal(e.status, 401);
    assert.equal(e.code, 'invalid_api_key');
    return true;
  });
  const none = await postJson(server, '/v1/chat/completions', chatBody());
  assert.equal(none.status, 401);
  assert.equal(none.json.error.type, 'invalid_request_error');
  assert.equal((await postJson(server, '/tokenize', { content: 'hi' })).status, 401);
  const ok = await postJson(server, '/tokenize', { content: 'hello world' },
    { authorization: `Bearer ${API_KEY}` });
  assert.equal(ok.status, 200);
  assert.deepEqual(ok.json.tokens, [14990, 1879]);
  assert.equal((await fetch(`${server.url}/health`)).status, 200);
  assert.equal((await fetch(`${server.url}/metrics`)).status, 200);
});

test('CORS only for the configured origin', async () => {
  const preflight = await fetch(`${server.url}/v1/chat/completions`, {
    method: 'OPTIONS',
    headers: { origin: 'http://app.example', 'access-control-request-method': 'POST' },
  });
  assert.equal(preflight.status, 204);
  assert.equal(preflight.headers.get('access-control-allow-origin'), 'http://app.example');
  assert.match(preflight.headers.get('access-control-allow-headers'), /Authorization/);
  const other = await fetch(`${server.url}/health`, { headers: { origin: 'http://evil.example' } });
  assert.equal(other.headers.get('access-control-allow-origin'), null);
});
