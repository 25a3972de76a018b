// A mixture-of-experts model behind the API (gen-model's tiny-moe: 8 experts, 2 active): the model
// list names it, structured output and tool calls hold, concurrent requests batch together and give
// the answers they give alone, and an image's second turn reuses the prefix and the image.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import Ajv from 'ajv';
import { QVL_BIN, MODEL_DIR, startServer, imageDataUri, metricValue } from './helpers.mjs';

let server;
let client;
let dir;

before(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'qvl-moe-'));
  execFileSync(QVL_BIN, ['--log-level', 'warn', 'gen-model', '--preset', 'tiny-moe',
                         '--tokenizer', MODEL_DIR, '--out', dir, '--seed', '11']);
  server = await startServer(['--parallel', '4'], { modelDir: dir });
  client = new OpenAI({ apiKey: 'none', baseURL: `${server.url}/v1`, maxRetries: 0 });
});

after(async () => {
  const { code } = await server.stop();
  rmSync(dir, { recursive: true, force: true });
  assert.equal(code, 0);
});

test('structured output and a tool call on the mixture', async () => {
  const schema = {
    type: 'object',
    properties: { name: { type: 'string' }, count: { type: 'integer' }, ok: { type: 'boolean' } },
    required: ['name', 'count', 'ok'], additionalProperties: false,
  };
  const validate = new Ajv({ strict: false }).compile(schema);
  for (const seed of [1, 2]) {
    const c = await client.chat.completions.create({
      model: 'tiny-moe', messages: [{ role: 'user', content: 'Answer in JSON.' }],
      max_tokens: 120, temperature: 1, seed,
      response_format: { type: 'json_schema', json_schema: { name: 'answer', schema, strict: true } },
    });
    const text = c.choices[0].message.content;
    assert.equal(c.choices[0].finish_reason, 'stop', text);
    assert.ok(validate(JSON.parse(text)), text);
  }
  const tools = [{
    type: 'function',
    function: {
      name: 'get_weather',
      parameters: { type: 'object', properties: { unit: { type: 'string', enum: ['c', 'f'] } },
                    required: ['unit'], additionalProperties: false },
    },
  }];
  const c = await client.chat.completions.create({
    model: 'tiny-moe', messages: [{ role: 'user', content: 'Weather?' }], tools,
    tool_choice: 'required', max_tokens: 200, temperature: 1, seed: 3,
  });
  const calls = c.choices[0].message.tool_calls;
  assert.equal(calls?.length >= 1, true, JSON.stringify(c.choices[0]));
  assert.equal(calls[0].function.name, 'get_weather');
  assert.ok(['c', 'f'].includes(JSON.parse(calls[0].function.arguments).unit));
});

test('concurrent requests batch and answer as they do alone; turn 2 reuses the image', async () => {
  const ask = (text) => client.chat.completions.create({
    model: 'tiny-moe', messages: [{ role: 'user', content: text }],
    max_tokens: 12, temperature: 0, draft_tokens: 0,
  });
  const prompts = ['Name three colours of the rainbow, please.', 'Count from one to five in words.',
                   'What is the capital of France?', 'Write one sentence about the sea.'];
  const alone = [];
  for (const p of prompts) alone.push((await ask(p)).choices[0].message.content);
  const together = await Promise.all(prompts.map(ask));
  assert.deepEqual(together.map((c) => c.choices[0].message.content), alone);

  const image = { type: 'image_url', image_url: { url: imageDataUri('a_iv_shapes_256x200.png') } };
  const turn1 = [{ role: 'user', content: [image, { type: 'text', text: 'What shapes?' }] }];
  const first = await client.chat.completions.create({ model: 'tiny-moe', messages: turn1,
                                                       max_tokens: 6, temperature: 0 });
  const hits = await metricValue(server, 'qvl_image_cache_hits_total');
  const second = await client.chat.completions.create({
    model: 'tiny-moe', max_tokens: 6, temperature: 0,
    messages: [...turn1, { role: 'assistant', content: first.choices[0].message.content },
               { role: 'user', content: [image, { type: 'text', text: 'And colours?' }] }],
  });
  assert.ok(second.usage.prompt_tokens_details.cached_tokens > 0);
  assert.ok(await metricValue(server, 'qvl_image_cache_hits_total') > hits);
});

test('the model list says it is a mixture and what a token runs', async () => {
  const models = await client.models.list();
  assert.equal(models.data.length, 1);
  const m = models.data[0];
  assert.equal(m.experts, 8);
  assert.equal(m.experts_per_token, 2);
  assert.ok(m.active_parameters > 0 && m.active_parameters < m.parameters, JSON.stringify(m));
});
