// Documents through the API with the official OpenAI SDK: a PDF as a `file` content part (pages
// rendered in the media worker, each an image after a page marker), page selection, streaming,
// and bad documents as 400s within the limits (encrypted, past the last page, a decompression
// bomb stopped by --max-document-seconds, a file that is not a document).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { startServer } from './helpers.mjs';
import { runLengthBombPdf, twoPagePdf } from './make_pdf.mjs';

const twoPages = twoPagePdf();
const bomb = runLengthBombPdf();

const dataUri = (bytes, mime = 'application/pdf') => `data:${mime};base64,${bytes.toString('base64')}`;
const filePart = (bytes, extra = {}) =>
  ({ type: 'file', file: { file_data: dataUri(bytes), filename: 'doc.pdf', ...extra } });

let server;
let client;
let dir;

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'qvl-documents-'));
  // Small pages keep the tiny model's vision quick; the limits are the ones under test.
  server = await startServer(['--document-page-tokens', '64', '--max-document-seconds', '3',
                              '--max-document-pages', '8']);
  client = new OpenAI({ apiKey: 'none', baseURL: `${server.url}/v1`, maxRetries: 0 });
});

after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0);
  rmSync(dir, { recursive: true, force: true });
});

async function ask(part, extra = {}) {
  return client.chat.completions.create({
    model: 'tiny',
    messages: [{ role: 'user', content: [{ type: 'text', text: 'What is the total?' }, part] }],
    max_tokens: 2,
    temperature: 0,
    ...extra,
  });
}

async function badRequest(part) {
  try {
    await ask(part);
  } catch (error) {
    assert.equal(error.status, 400, String(error));
    return error;
  }
  assert.fail('accepted');
}

test('a PDF file part: every page is an image in the prompt', async () => {
  const both = await ask(filePart(twoPages));
  assert.equal(both.object, 'chat.completion');
  const first = await ask(filePart(twoPages, { pages: '1' }));
  const second = await ask(filePart(twoPages, { pages: 2 }));
  // Each page adds its marker and up to 64 image tokens (at least 4 blocks each).
  const textOnly = await client.chat.completions.create({
    model: 'tiny',
    messages: [{ role: 'user', content: 'What is the total?' }],
    max_tokens: 2,
  });
  const page1 = first.usage.prompt_tokens - textOnly.usage.prompt_tokens;
  const page2 = second.usage.prompt_tokens - textOnly.usage.prompt_tokens;
  assert.ok(page1 > 40 && page1 < 90, `page 1 costs ${page1} tokens`);
  assert.ok(page2 > 40 && page2 < 90, `page 2 costs ${page2} tokens`);
  assert.equal(both.usage.prompt_tokens, textOnly.usage.prompt_tokens + page1 + page2);
});

test('the text layer alone costs no image tokens', async () => {
  const textLayer = await ask(filePart(twoPages, { text: true, images: false }));
  const images = await ask(filePart(twoPages));
  assert.ok(textLayer.usage.prompt_tokens < images.usage.prompt_tokens - 60);
});

test('streaming with a file part', async () => {
  const stream = await ask(filePart(twoPages), { stream: true, stream_options: { include_usage: true } });
  let usage = null;
  for await (const chunk of stream) if (chunk.usage) usage = chunk.usage;
  assert.ok(usage.prompt_tokens > 100);
});

test('bad documents are 400s naming the problem', async () => {
  const plain = path.join(dir, 'plain.pdf');
  const locked = path.join(dir, 'locked.pdf');
  writeFileSync(plain, twoPages);
  execFileSync('qpdf', ['--encrypt', 'secret', 'owner', '256', '--', plain, locked]);
  const encrypted = readFileSync(locked);
  let error = await badRequest(filePart(encrypted));
  assert.match(error.message, /the PDF is encrypted: it needs a password/);
  const opened = await ask(filePart(encrypted, { password: 'secret' }));
  assert.equal(opened.object, 'chat.completion');

  error = await badRequest(filePart(twoPages, { pages: '3-' }));
  assert.match(error.message, /page 3 is past the document's last page \(2\)/);
  error = await badRequest(filePart(Buffer.from('just some text')));
  assert.match(error.message, /not the application\/pdf its data URI says/);
  error = await badRequest({ type: 'file', file: { file_id: 'file-123' } });
  assert.match(error.message, /file_id needs a Files API/);

  const start = Date.now();
  error = await badRequest(filePart(bomb));
  assert.match(error.message, /rendering the PDF took longer than its time limit of 3 s/);
  assert.ok(Date.now() - start < 60000);
  // The server is still fine.
  const after = await ask(filePart(twoPages, { pages: '1' }));
  assert.equal(after.object, 'chat.completion');
});
