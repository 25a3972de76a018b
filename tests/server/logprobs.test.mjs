// logprobs / top_logprobs through the official OpenAI SDK, streamed and not, and the 400s for bad
// values and for OpenAI fields qvl does not implement.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startServer } from './helpers.mjs';

let server;
let client;

before(async () => {
  server = await startServer();
  client = new OpenAI({ apiKey: 'unused', baseURL: `${server.url}/v1`, maxRetries: 0 });
});

after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0);
});

const request = {
  model: 'qwen3vl-tiny-a',
  messages: [{ role: 'user', content: 'Write a word.' }],
  max_tokens: 6,
  temperature: 0,
  logprobs: true,
  top_logprobs: 3,
};

function checkEntry(entry, top) {
  assert.equal(typeof entry.token, 'string');
  assert.ok(entry.logprob <= 0 && entry.logprob >= -9999, `${entry.logprob}`);
  assert.ok(Array.isArray(entry.bytes) && entry.bytes.length > 0);
  for (const b of entry.bytes) assert.ok(Number.isInteger(b) && b >= 0 && b < 256);
  assert.equal(entry.top_logprobs.length, top);
  for (let k = 1; k < top; ++k) {
    assert.ok(entry.top_logprobs[k].logprob <= entry.top_logprobs[k - 1].logprob);
  }
}

test('non-streaming: one entry per token, greedy picks the top alternative', async () => {
  const completion = await client.chat.completions.create(request);
  const content = completion.choices[0].logprobs.content;
  assert.equal(content.length, completion.usage.completion_tokens);
  for (const entry of content) {
    checkEntry(entry, 3);
    assert.deepEqual(entry.top_logprobs[0].bytes, entry.bytes);
    assert.equal(entry.top_logprobs[0].logprob, entry.logprob);
  }
  // The tokens' bytes are the answer.
  const bytes = Buffer.from(content.flatMap((e) => e.bytes));
  assert.equal(bytes.toString('utf8'), completion.choices[0].message.content);
  const plain = await client.chat.completions.create({ ...request, logprobs: undefined, top_logprobs: undefined });
  assert.equal(plain.choices[0].logprobs, null);
  assert.equal(plain.choices[0].message.content, completion.choices[0].message.content);
});

test('streaming: chunks carry the same entries as the whole answer', async () => {
  const whole = await client.chat.completions.create({ ...request, top_logprobs: 0 });
  const stream = await client.chat.completions.create({ ...request, top_logprobs: 0, stream: true });
  const entries = [];
  let text = '';
  for await (const chunk of stream) {
    const choice = chunk.choices[0];
    if (!choice) continue;
    text += choice.delta?.content ?? '';
    if (choice.logprobs) entries.push(...choice.logprobs.content);
  }
  assert.equal(text, whole.choices[0].message.content);
  const expected = whole.choices[0].logprobs.content;
  assert.equal(entries.length, expected.length);
  entries.forEach((e, i) => {
    checkEntry(e, 0);
    assert.deepEqual(e.bytes, expected[i].bytes);
    assert.ok(Math.abs(e.logprob - expected[i].logprob) < 1e-3, `${e.logprob} vs ${expected[i].logprob}`);
  });
});

test('bad logprobs values and unimplemented fields are 400s naming the field', async () => {
  const cases = [
    [{ top_logprobs: 21 }, 'top_logprobs'],
    [{ top_logprobs: -1 }, 'top_logprobs'],
    [{ logprobs: false, top_logprobs: 2 }, 'top_logprobs'],
    [{ logprobs: 'yes' }, 'logprobs'],
    [{ logit_bias: { 15: 10 } }, 'logit_bias'],
    [{ functions: [{ name: 'f', parameters: {} }] }, 'functions'],
    [{ audio: { voice: 'alloy', format: 'wav' } }, 'audio'],
    [{ n: 2 }, 'n'],
  ];
  for (const [extra, param] of cases) {
    await assert.rejects(client.chat.completions.create({ ...request, ...extra }), (e) => {
      assert.equal(e.status, 400, JSON.stringify(extra));
      assert.equal(e.param, param, JSON.stringify(extra));
      return true;
    });
  }
});
