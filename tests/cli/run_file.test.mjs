// `qvl run --file`: a PDF's pages in the prompt (a marker and the page's image tokens each, at the
// --page-tokens budget), its text layer instead, page selection, and clear errors.
// Usage: node run_file.test.mjs <qvl binary> <model dir>
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { twoPagePdf } from '../server/make_pdf.mjs';

const [QVL, MODEL] = process.argv.slice(2);
if (!QVL || !MODEL) throw new Error('usage: node run_file.test.mjs <qvl binary> <model dir>');
const IMAGE_PAD = 151655;
let dir;
let pdf;

before(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qvl-run-file-'));
  pdf = path.join(dir, 'doc.pdf');
  fs.writeFileSync(pdf, twoPagePdf());
});
after(() => { fs.rmSync(dir, { recursive: true, force: true }); });

function run(args) {
  const r = spawnSync(QVL, ['--log-level', 'warn', 'run', '-m', MODEL, '--max-tokens', '2',
                            '--json', ...args, 'What is the total?'], { encoding: 'utf8' });
  return { code: r.status, json: r.status === 0 ? JSON.parse(r.stdout) : null, stderr: r.stderr };
}

const pads = (ids) => ids.filter((id) => id === IMAGE_PAD).length;

test('each page is its image tokens at the page budget', () => {
  const both = run(['--file', pdf, '--page-tokens', '64']);
  assert.equal(both.code, 0, both.stderr);
  // Letter at 64 tokens: 224 x 288 px = 63; the 300 x 200 label: 288 x 192 px = 54.
  assert.equal(pads(both.json.prompt_ids), 63 + 54);
  const second = run(['--file', pdf, '--page-tokens', '64', '--pages', '2']);
  assert.equal(pads(second.json.prompt_ids), 54);
});

test('the text layer instead of the images', () => {
  const text = run(['--file', pdf, '--file-text-only']);
  assert.equal(text.code, 0, text.stderr);
  assert.equal(pads(text.json.prompt_ids), 0);
  const withText = run(['--file', pdf, '--page-tokens', '64', '--file-text']);
  assert.equal(pads(withText.json.prompt_ids), 63 + 54);
  assert.ok(withText.json.prompt_ids.length > text.json.prompt_ids.length + 100);
});

test('bad pages and files are clear errors', () => {
  const past = run(['--file', pdf, '--pages', '3']);
  assert.notEqual(past.code, 0);
  assert.match(past.stderr, /page 3 is past the document's last page \(2\)/);
  const notPdf = path.join(dir, 'notes.txt');
  fs.writeFileSync(notPdf, 'hello');
  const wrong = run(['--file', notPdf]);
  assert.notEqual(wrong.code, 0);
  assert.match(wrong.stderr, /notes\.txt is neither a PDF nor a TIFF/);
});

test('qvl batch --requests: file parts in request lines', () => {
  const user = (content) => [{ role: 'user', content }];
  const file = (pages) => ({
    type: 'file',
    file: { file_data: `data:application/pdf;base64,${fs.readFileSync(pdf).toString('base64')}`,
            filename: 'doc.pdf', pages },
  });
  const requests = path.join(dir, 'requests.jsonl');
  fs.writeFileSync(requests, [
    { id: 'label', messages: user([file('2'), { type: 'text', text: 'Which parcel?' }]), max_tokens: 2 },
    { id: 'past', messages: user([file('5'), { type: 'text', text: 'What?' }]), max_tokens: 2 },
  ].map((l) => JSON.stringify(l)).join('\n') + '\n');
  const out = path.join(dir, 'out.jsonl');
  const r = spawnSync(QVL, ['--log-level', 'warn', 'batch', '-m', MODEL, '--requests', requests,
                            '-o', out], { encoding: 'utf8' });
  assert.equal(r.status, 2, r.stderr);  // one line failed
  const lines = Object.fromEntries(fs.readFileSync(out, 'utf8').trim().split('\n')
    .map((l) => JSON.parse(l)).map((l) => [l.id, l]));
  // The label at the document default (1280 tokens): 1408 x 928 px = 1276 image tokens.
  assert.equal(lines.label.timings.image_tokens, 1276);
  assert.match(lines.past.error.message, /page 5 is past the document's last page \(2\)/);
});

test('qvl batch over a PDF: one line per page, resumable', () => {
  const out = path.join(dir, 'pages.jsonl');
  const batch = () => spawnSync(QVL, ['--log-level', 'warn', 'batch', '-m', MODEL, pdf,
                                      '--prompt', 'Read the page.', '--max-tokens', '2',
                                      '-o', out], { encoding: 'utf8' });
  const first = batch();
  assert.equal(first.status, 0, first.stderr);
  const lines = fs.readFileSync(out, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  assert.deepEqual(lines.map((l) => l.id).sort(), [`${pdf}#page=1`, `${pdf}#page=2`]);
  for (const line of lines) {
    assert.equal(typeof line.answer, 'string');
    assert.ok(line.timings.image_tokens > 1000);  // one page at the 1280-token default
  }
  const again = batch();
  assert.equal(again.status, 0, again.stderr);
  assert.equal(fs.readFileSync(out, 'utf8').trim().split('\n').length, 2);  // nothing redone
});

test('qvl batch --per-document: one line per document with its pages in order, resumable', () => {
  const out = path.join(dir, 'documents.jsonl');
  const image = path.join(MODEL, 'images', fs.readdirSync(path.join(MODEL, 'images')).sort()[0]);
  const schema = path.join(dir, 'schema.json');
  fs.writeFileSync(schema, JSON.stringify({
    type: 'object', properties: { total: { type: 'number' } }, required: ['total'], additionalProperties: false,
  }));
  const batch = (extra) => spawnSync(QVL, ['--log-level', 'warn', 'batch', '-m', MODEL, pdf, image,
                                           '--max-tokens', '2', '--per-document', '-o', out, ...extra],
                                     { encoding: 'utf8' });
  const first = batch(['--preset', 'ocr']);
  assert.equal(first.status, 0, first.stderr);
  assert.match(first.stderr, /images\/min/);  // an image among the inputs
  const lines = Object.fromEntries(fs.readFileSync(out, 'utf8').trim().split('\n')
    .map((l) => JSON.parse(l)).map((l) => [l.id, l]));
  assert.deepEqual(Object.keys(lines).sort(), [image, pdf].sort());
  const doc = lines[pdf];
  assert.equal(doc.file, pdf);
  assert.deepEqual(doc.pages.map((p) => p.page), [1, 2]);
  for (const page of doc.pages) {
    assert.equal(typeof page.answer, 'string');
    assert.ok(page.timings.image_tokens > 1000);  // each page at the 1280-token default
  }
  for (const key of ['prompt_tokens', 'completion_tokens', 'total_tokens']) {
    assert.equal(doc.usage[key], doc.pages[0].usage[key] + doc.pages[1].usage[key]);
  }
  assert.equal(doc.error, undefined);
  assert.equal(typeof lines[image].answer, 'string');  // other inputs keep their own lines
  // Resumed per document: nothing is redone.
  const again = batch(['--preset', 'ocr']);
  assert.equal(again.status, 0, again.stderr);
  assert.equal(fs.readFileSync(out, 'utf8').trim().split('\n').length, 2);

  // Data per page with --json-schema; a run of pages only counts pages per minute.
  fs.rmSync(out);
  const data = spawnSync(QVL, ['--log-level', 'warn', 'batch', '-m', MODEL, pdf, '--prompt', 'The total?',
                               '--json-schema', schema, '--max-tokens', '40', '--per-document', '-o', out],
                         { encoding: 'utf8' });
  assert.equal(data.status, 0, data.stderr);
  assert.match(data.stderr, /pages\/min/);
  const [line] = fs.readFileSync(out, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  assert.deepEqual(line.pages.map((p) => [p.page, typeof p.answer.total]), [[1, 'number'], [2, 'number']]);

  const refused = spawnSync(QVL, ['batch', '-m', MODEL, '--requests', schema, '--per-document', '-o', out],
                            { encoding: 'utf8' });
  assert.notEqual(refused.status, 0);
  assert.match(refused.stderr, /--per-document is for document files/);
});
