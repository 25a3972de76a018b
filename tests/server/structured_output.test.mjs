// Constrained decoding and tool calls through the official OpenAI SDK. The tiny test model has
// random weights, so any valid answer proves the constraint: every schema of the corpus is asked
// with several seeds at temperature 1, and each answer is checked by ajv (an independent JSON
// Schema validator). Tool calls: required / named choices, streaming deltas, the round trip.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { startServer, postJson, metricValue } from './helpers.mjs';

let server;
let client;
const ajv = new Ajv({ strict: false, allErrors: true });
addFormats(ajv);

before(async () => {
  server = await startServer();
  client = new OpenAI({ apiKey: 'none', baseURL: `${server.url}/v1`, maxRetries: 0 });
});

after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0);
});

const SCHEMAS = {
  person: {
    type: 'object',
    properties: {
      name: { type: 'string' }, age: { type: 'integer' },
      email: { type: ['string', 'null'] },
      tags: { type: 'array', items: { type: 'string', enum: ['a', 'b', 'c'] }, maxItems: 3 },
    },
    required: ['name', 'age'], additionalProperties: false,
  },
  event: {
    type: 'object',
    properties: {
      title: { type: 'string' }, day: { type: 'string', format: 'date' },
      at: { type: 'string', format: 'date-time' }, id: { type: 'string', format: 'uuid' },
      ok: { type: 'boolean' }, none: { type: 'null' },
    },
    required: ['title', 'day', 'at', 'id', 'ok', 'none'], additionalProperties: false,
  },
  numbers: {
    type: 'array', items: { type: 'number' }, minItems: 2, maxItems: 4,
  },
  choice: {
    anyOf: [
      { type: 'object', properties: { kind: { const: 'circle' }, r: { type: 'number' } }, required: ['kind', 'r'] },
      { type: 'object', properties: { kind: { const: 'box' }, w: { type: 'integer' }, h: { type: 'integer' } }, required: ['kind', 'w', 'h'] },
    ],
  },
  tree: {
    $defs: {
      node: {
        type: 'object',
        properties: { v: { type: 'integer' }, kids: { type: 'array', items: { $ref: '#/$defs/node' }, maxItems: 2 } },
        required: ['v'], additionalProperties: false,
      },
    },
    $ref: '#/$defs/node',
  },
  map: { type: 'object', additionalProperties: { type: 'boolean' } },
  enums: { enum: ['red', 1, null, true, { x: [1] }] },
  nested: {
    type: 'object',
    properties: {
      a: { type: 'object', properties: { b: { type: 'object', properties: { c: { type: 'array', items: { type: ['integer', 'string'] }, minItems: 1 } }, required: ['c'] } }, required: ['b'] },
    },
    required: ['a'],
  },
};

async function ask(schema, seed, extra = {}) {
  return client.chat.completions.create({
    model: 'tiny',
    messages: [{ role: 'user', content: 'Answer in JSON.' }],
    max_tokens: 160, temperature: 1, seed,
    response_format: { type: 'json_schema', json_schema: { name: 'answer', schema, strict: true } },
    ...extra,
  });
}

test('every answer of the schema corpus is valid JSON that ajv accepts', async () => {
  for (const [name, schema] of Object.entries(SCHEMAS)) {
    const validate = ajv.compile(schema);
    for (const seed of [1, 2, 3]) {
      const c = await ask(schema, seed);
      const text = c.choices[0].message.content;
      // The distance to completion is forced near max_tokens, so every answer completes.
      assert.equal(c.choices[0].finish_reason, 'stop', `${name}/${seed}: ${text}`);
      let value;
      assert.doesNotThrow(() => { value = JSON.parse(text); }, `${name}/${seed}: ${text}`);
      assert.ok(validate(value), `${name}/${seed}: ${text}\n${JSON.stringify(validate.errors)}`);
      assert.ok(c.timings.constraint_ms >= 0);
    }
  }
});

test('json_object answers are objects; streaming gives the same answer', async () => {
  const body = {
    model: 'tiny', messages: [{ role: 'user', content: 'JSON please' }],
    max_tokens: 80, temperature: 1, seed: 7, response_format: { type: 'json_object' },
  };
  const c = await client.chat.completions.create(body);
  const value = JSON.parse(c.choices[0].message.content);
  assert.equal(typeof value, 'object');
  assert.ok(!Array.isArray(value) && value !== null);
  const stream = await client.chat.completions.create({ ...body, stream: true });
  let text = '';
  let finish = null;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta?.content ?? '';
    finish = chunk.choices[0]?.finish_reason ?? finish;
  }
  assert.equal(text, c.choices[0].message.content);
  assert.equal(finish, 'stop');
});

test('too few tokens for the schema: finish_reason length', async () => {
  const c = await ask(SCHEMAS.event, 1, { max_tokens: 5 });
  assert.equal(c.choices[0].finish_reason, 'length');
  assert.equal(c.usage.completion_tokens, 5);
});

test('unsupported schema keywords are a 400 naming them', async () => {
  for (const [schema, keyword] of [
    [{ type: 'string', pattern: '^a+$' }, 'pattern'],
    [{ type: 'object', properties: { n: { type: 'integer', minimum: 3 } } }, 'minimum'],
    [{ oneOf: [{ type: 'string' }] }, 'oneOf'],
    [{ type: 'string', format: 'email' }, 'email'],
  ]) {
    const r = await postJson(server, '/v1/chat/completions', {
      model: 'tiny', messages: [{ role: 'user', content: 'x' }],
      response_format: { type: 'json_schema', json_schema: { name: 'x', schema } },
    });
    assert.equal(r.status, 400, r.text);
    assert.equal(r.json.error.param, 'response_format.json_schema.schema');
    assert.match(r.json.error.message, new RegExp(keyword));
  }
  const bad = await postJson(server, '/v1/chat/completions', {
    model: 'tiny', messages: [{ role: 'user', content: 'x' }], response_format: { type: 'yaml' },
  });
  assert.equal(bad.status, 400);
  assert.equal(bad.json.error.param, 'response_format.type');
});

const TOOLS = [
  {
    type: 'function',
    function: {
      name: 'get_weather', description: 'Weather of a city',
      parameters: {
        type: 'object',
        properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
        required: ['city', 'unit'], additionalProperties: false,
      },
    },
  },
  {
    type: 'function',
    function: { name: 'get_time', parameters: { type: 'object', properties: { zone: { type: 'string' } }, required: ['zone'] } },
  },
];

function checkCall(call) {
  assert.match(call.id, /^call_/);
  assert.equal(call.type, 'function');
  const tool = TOOLS.find((t) => t.function.name === call.function.name);
  assert.ok(tool, call.function.name);
  const args = JSON.parse(call.function.arguments);
  const validate = ajv.compile(tool.function.parameters);
  assert.ok(validate(args), call.function.arguments);
}

test('tool_choice required and named: tool_calls that match the parameters', async () => {
  for (const seed of [1, 2]) {
    const c = await client.chat.completions.create({
      model: 'tiny', messages: [{ role: 'user', content: 'Weather in Paris?' }],
      tools: TOOLS, tool_choice: 'required', max_tokens: 120, temperature: 1, seed,
    });
    const choice = c.choices[0];
    assert.equal(choice.finish_reason, 'tool_calls', JSON.stringify(choice));
    assert.ok(choice.message.tool_calls.length >= 1);
    choice.message.tool_calls.forEach(checkCall);
  }
  const named = await client.chat.completions.create({
    model: 'tiny', messages: [{ role: 'user', content: 'Time?' }], tools: TOOLS,
    tool_choice: { type: 'function', function: { name: 'get_time' } },
    max_tokens: 120, temperature: 1, seed: 3,
  });
  assert.equal(named.choices[0].message.tool_calls.length, 1);
  assert.equal(named.choices[0].message.tool_calls[0].function.name, 'get_time');
  checkCall(named.choices[0].message.tool_calls[0]);
});

test('streamed tool calls arrive as tool_calls deltas the SDK accumulates', async () => {
  const stream = client.beta.chat.completions.stream({
    model: 'tiny', messages: [{ role: 'user', content: 'Weather?' }], tools: TOOLS,
    tool_choice: { type: 'function', function: { name: 'get_weather' } },
    max_tokens: 120, temperature: 1, seed: 4, stream: true,
  });
  const final = await stream.finalChatCompletion();
  const choice = final.choices[0];
  assert.equal(choice.finish_reason, 'tool_calls');
  assert.equal(choice.message.tool_calls.length, 1);
  assert.equal(choice.message.tool_calls[0].function.name, 'get_weather');
  checkCall(choice.message.tool_calls[0]);
});

test('tool round trip: assistant tool_calls and tool results in the history', async () => {
  const first = await client.chat.completions.create({
    model: 'tiny', messages: [{ role: 'user', content: 'Weather in Paris?' }], tools: TOOLS,
    tool_choice: 'required', parallel_tool_calls: false, max_tokens: 120, temperature: 1, seed: 5,
  });
  const calls = first.choices[0].message.tool_calls;
  assert.equal(calls.length, 1);
  const messages = [
    { role: 'user', content: 'Weather in Paris?' },
    { role: 'assistant', content: null, tool_calls: calls },
    { role: 'tool', tool_call_id: calls[0].id, content: '{"temperature": 21}' },
  ];
  const second = await client.chat.completions.create({
    model: 'tiny', messages, tools: TOOLS, max_tokens: 8, temperature: 0,
  });
  assert.equal(typeof second.choices[0].message.content, 'string');
  // The history is in the prompt: more tokens than the question alone.
  assert.ok(second.usage.prompt_tokens > first.usage.prompt_tokens + 10);
  // tool_choice auto: plain text stays content.
  assert.equal(second.choices[0].message.tool_calls, undefined);
});

test('bad tool requests are 400s naming the field', async () => {
  const cases = [
    [{ tools: TOOLS, tool_choice: { type: 'function', function: { name: 'nope' } } }, 'tool_choice.function.name'],
    [{ tool_choice: 'required' }, 'tool_choice'],
    [{ tools: [{ type: 'retrieval' }] }, 'tools[0].type'],
    [{ tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { a: { type: 'string', maxLength: 3 } } } } }], tool_choice: 'required' }, 'tools[0].function.parameters'],
  ];
  for (const [extra, param] of cases) {
    const r = await postJson(server, '/v1/chat/completions', {
      model: 'tiny', messages: [{ role: 'user', content: 'x' }], ...extra,
    });
    assert.equal(r.status, 400, r.text);
    assert.equal(r.json.error.param, param, r.text);
  }
});

test('speculative decoding: drafts change no answer; usage, timings and /metrics count them', async () => {
  const drafts = () => Promise.all(['qvl_draft_tokens_total', 'qvl_draft_accepted_tokens_total']
    .map((name) => metricValue(server, name)));
  const [drafted0, accepted0] = await drafts();
  for (const [name, schema] of Object.entries(SCHEMAS)) {
    const plain = await ask(schema, 1, { temperature: 0, draft_tokens: 0 });
    const drafted = await ask(schema, 1, { temperature: 0 });
    assert.equal(drafted.choices[0].message.content, plain.choices[0].message.content, name);
    assert.equal(drafted.usage.completion_tokens, plain.usage.completion_tokens, name);
    assert.equal(plain.usage.completion_tokens_details?.accepted_prediction_tokens, undefined);
    assert.equal(plain.timings.draft_tokens, 0);
    const details = drafted.usage.completion_tokens_details ?? {};
    // Required keys are forced text: drafted by jump-forward, and the model must agree.
    if (schema.required) assert.ok(details.accepted_prediction_tokens > 0, name);
    assert.equal(details.accepted_prediction_tokens + details.rejected_prediction_tokens,
                 drafted.timings.draft_tokens);
    assert.equal(details.accepted_prediction_tokens, drafted.timings.draft_accepted_tokens);
  }
  const [drafted1, accepted1] = await drafts();
  assert.ok(drafted1 > drafted0 && accepted1 > accepted0 && accepted1 - accepted0 <= drafted1 - drafted0);
  for (const bad of [-1, 65, 'x', 1.5]) {
    const r = await postJson(server, '/v1/chat/completions',
      { model: 'tiny', messages: [{ role: 'user', content: 'hi' }], draft_tokens: bad });
    assert.equal(r.status, 400, `draft_tokens ${bad}`);
    assert.match(r.json.error.message, /draft_tokens/);
  }
});
