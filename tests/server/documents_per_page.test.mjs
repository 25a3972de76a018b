// Per-page answering of a document ("document_mode": "per_page") with the official OpenAI SDK:
// one choice per selected page in page order (index k, qvl's `page` = the page number), each
// answer the same as asking about that page alone, usage summed, the stream's chunks merged by
// index as the SDK does for n > 1, json_schema data per page, a page that fails on its own (its
// prompt past the context) as that choice's error, and the refusals.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startServer } from './helpers.mjs';
import { makePdf, pdfText } from './make_pdf.mjs';

const threePages = makePdf([
  { content: pdfText(72, 700, 24, 'Invoice 1') + pdfText(72, 660, 12, 'Total: 10.00') },
  { content: pdfText(72, 700, 24, 'Invoice 2') + pdfText(72, 660, 12, 'Total: 20.00') },
  { width: 300, height: 200, content: pdfText(20, 100, 14, 'Parcel label 3') },
]);
// Page 2's text layer alone is longer than the server's 512-token context.
const longLine = 'quantity description unit price amount subtotal tax';
const longSecondPage = makePdf([
  { content: pdfText(72, 700, 12, 'Short page') },
  { content: Array.from({ length: 40 }, (_, i) => pdfText(40, 760 - 18 * i, 9, `${longLine} ${i}`)).join('') },
]);

const filePart = (bytes, extra = {}) => ({
  type: 'file',
  file: { file_data: `data:application/pdf;base64,${bytes.toString('base64')}`, filename: 'doc.pdf', ...extra },
});
const messages = (part) => [{ role: 'user', content: [{ type: 'text', text: 'What is the total?' }, part] }];

let server;
let client;

before(async () => {
  server = await startServer(['--document-page-tokens', '64', '--ctx-size', '512', '--parallel', '4']);
  client = new OpenAI({ apiKey: 'none', baseURL: `${server.url}/v1`, maxRetries: 0 });
});

after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0);
});

const ask = (part, extra = {}) => client.chat.completions.create({
  model: 'tiny', messages: messages(part), max_tokens: 12, temperature: 0, ...extra,
});

test('one choice per page, in page order, each the answer about that page alone', async () => {
  const perPage = await ask(filePart(threePages, { pages: '1,3' }), { document_mode: 'per_page' });
  assert.equal(perPage.object, 'chat.completion');
  assert.deepEqual(perPage.choices.map((c) => [c.index, c.page]), [[0, 1], [1, 3]]);
  const alone = [await ask(filePart(threePages, { pages: '1' })), await ask(filePart(threePages, { pages: '3' }))];
  for (const [k, single] of alone.entries()) {
    assert.equal(perPage.choices[k].message.content, single.choices[0].message.content);
    assert.equal(perPage.choices[k].finish_reason, single.choices[0].finish_reason);
  }
  const sum = (key) => alone.reduce((total, r) => total + r.usage[key], 0);
  assert.equal(perPage.usage.prompt_tokens, sum('prompt_tokens'));
  assert.equal(perPage.usage.completion_tokens, sum('completion_tokens'));
  assert.equal(perPage.usage.total_tokens, sum('total_tokens'));
  // "whole" (the default) keeps every page in one prompt and one choice.
  const whole = await ask(filePart(threePages, { pages: '1,3' }), { document_mode: 'whole' });
  assert.equal(whole.choices.length, 1);
});

test('streamed: chunks carry their page index and the SDK merges them', async () => {
  const all = await ask(filePart(threePages), { document_mode: 'per_page', max_tokens: 120 });
  const stream = await ask(filePart(threePages), {
    document_mode: 'per_page', max_tokens: 120, stream: true, stream_options: { include_usage: true },
  });
  const content = ['', '', ''];
  const events = [];
  let usage = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const choice of chunk.choices) {
      assert.equal(choice.page, choice.index + 1);
      assert.equal(content[choice.index] === null, false, `chunk of page ${choice.page} after its finish`);
      if (choice.delta.role) events.push(['role', choice.index]);
      if (choice.delta.content) {
        content[choice.index] += choice.delta.content;
        events.push(['content', choice.index]);
      }
      if (choice.finish_reason) {
        events.push(['finish', choice.index, choice.finish_reason]);
        assert.equal(content[choice.index], all.choices[choice.index].message.content);
        content[choice.index] = null;
      }
    }
  }
  assert.deepEqual(content, [null, null, null]);
  assert.deepEqual(events.slice(0, 3), [['role', 0], ['role', 1], ['role', 2]]);
  // The same tokens (the prefix cache may hold more of the prompts the second time).
  for (const key of ['prompt_tokens', 'completion_tokens', 'total_tokens']) assert.equal(usage[key], all.usage[key]);
  // The pages generated together: another page's text came before the first page finished (120
  // decode steps leave every page's prefill time to join, even on a busy machine).
  const firstFinish = events.findIndex((e) => e[0] === 'finish');
  assert.ok(events.slice(0, firstFinish).some((e) => e[0] === 'content' && e[1] !== events[firstFinish][1]),
            JSON.stringify(events));

  // The SDK's stream helper assembles the choices by index.
  const runner = client.beta.chat.completions.stream({
    model: 'tiny', messages: messages(filePart(threePages)), max_tokens: 120, temperature: 0,
    document_mode: 'per_page',
  });
  const merged = await runner.finalChatCompletion();
  assert.deepEqual(merged.choices.map((c) => c.message.content), all.choices.map((c) => c.message.content));
});

test('json_schema: data per page', async () => {
  const schema = {
    type: 'object', properties: { total: { type: 'number' }, page_kind: { enum: ['invoice', 'label'] } },
    required: ['total', 'page_kind'], additionalProperties: false,
  };
  const r = await ask(filePart(threePages), {
    document_mode: 'per_page', max_tokens: 60, temperature: 1, seed: 7,
    response_format: { type: 'json_schema', json_schema: { name: 'page', schema, strict: true } },
  });
  assert.equal(r.choices.length, 3);
  for (const choice of r.choices) {
    assert.equal(choice.finish_reason, 'stop', choice.message.content);
    const data = JSON.parse(choice.message.content);
    assert.equal(typeof data.total, 'number');
    assert.ok(['invoice', 'label'].includes(data.page_kind));
  }
});

test('a page that fails on its own is that choice\'s error; the others answer', async () => {
  const part = filePart(longSecondPage, { text: true });
  const r = await ask(part, { document_mode: 'per_page' });
  assert.deepEqual(r.choices.map((c) => [c.index, c.page]), [[0, 1], [1, 2]]);
  assert.notEqual(r.choices[0].finish_reason, 'error');
  assert.equal(r.choices[1].finish_reason, 'error');
  assert.equal(r.choices[1].message.content, null);
  assert.match(r.choices[1].error.message, /context/);
  assert.ok(r.usage.completion_tokens > 0);

  const stream = await ask(part, { document_mode: 'per_page', stream: true });
  const finishes = {};
  for await (const chunk of stream) {
    for (const choice of chunk.choices) {
      if (choice.finish_reason) finishes[choice.page] = [choice.finish_reason, choice.error?.message];
    }
  }
  assert.equal(finishes[1][0], r.choices[0].finish_reason);
  assert.equal(finishes[2][0], 'error');
  assert.match(finishes[2][1], /context/);
});

test('refusals: no file, two files, images, n > 1, an unknown mode', async () => {
  const refused = async (request, pattern) => {
    try {
      await client.chat.completions.create({ model: 'tiny', max_tokens: 2, ...request });
    } catch (error) {
      assert.equal(error.status, 400, String(error));
      assert.match(error.message, pattern);
      return;
    }
    assert.fail('accepted');
  };
  const part = filePart(threePages);
  await refused({ messages: [{ role: 'user', content: 'hi' }], document_mode: 'per_page' },
                /needs exactly one file part .* got 0/);
  await refused({ messages: [{ role: 'user', content: [part, part] }], document_mode: 'per_page' },
                /needs exactly one file part .* got 2/);
  const png = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC';
  await refused({
    messages: [{ role: 'user', content: [part, { type: 'image_url', image_url: { url: png } }] }],
    document_mode: 'per_page',
  }, /without images or videos/);
  await refused({ messages: messages(part), document_mode: 'per_page', n: 2 }, /only n=1/);
  await refused({ messages: messages(part), document_mode: 'pages' }, /must be "whole" or "per_page"/);
});
