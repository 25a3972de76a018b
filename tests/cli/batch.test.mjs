// `qvl batch` with the real binary and the tiny model: a folder of good, corrupt and non-image
// files, interruption (SIGINT once: finish the running inputs; twice: stop them) and a partial last
// line from a crash, then resume with every id exactly once; --requests mode; --json-schema.
// Usage: node batch.test.mjs <qvl binary> <model dir>
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const [QVL, MODEL] = process.argv.slice(2);
if (!QVL || !MODEL) throw new Error('usage: node batch.test.mjs <qvl binary> <model dir>');
const IMAGES = path.join(MODEL, 'images');
let dir;

before(() => { dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qvl-batch-')); });
after(() => { fs.rmSync(dir, { recursive: true, force: true }); });

// Runs qvl batch; `onLines(count, proc, stderr)` is called as progress lines appear (for
// interrupting).
function batch(args, { onLines } = {}) {
  return new Promise((resolve) => {
    const proc = spawn(QVL, ['--log-level', 'warn', 'batch', '-m', MODEL, ...args],
      { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    proc.stdout.resume();
    proc.stderr.on('data', (d) => {
      stderr += d;
      // Non-terminal progress: one "[k/n] id ok|failed" line per finished input.
      if (onLines) onLines((stderr.match(/^\[\d+\/\d+\] /gm) || []).length, proc, stderr);
    });
    proc.on('exit', (code, signal) => resolve({ code, signal, stderr }));
  });
}

function readLines(file) {
  const text = fs.readFileSync(file, 'utf8');
  assert.ok(text === '' || text.endsWith('\n'), 'the file ends on a line boundary');
  return text.split('\n').filter((l) => l).map((l) => JSON.parse(l));
}

function copy(name, to) { fs.copyFileSync(path.join(IMAGES, name), to); }

test('a folder of good, corrupt and non-image files: bad inputs fail their own line', async () => {
  const folder = path.join(dir, 'mixed');
  fs.mkdirSync(folder);
  copy('a_ii_shapes_200x120.png', path.join(folder, 'shapes.png'));
  copy('a_iii_scene_640x480.jpg', path.join(folder, 'scene.JPG'));
  fs.writeFileSync(path.join(folder, 'corrupt.jpg'),
    Buffer.concat([fs.readFileSync(path.join(IMAGES, 'a_iii_scene_640x480.jpg')).subarray(0, 600)]));
  fs.writeFileSync(path.join(folder, 'fake.png'), 'not an image\n');
  fs.writeFileSync(path.join(folder, 'notes.txt'), 'ignored: no image extension\n');
  const out = path.join(dir, 'mixed.jsonl');
  const args = ['--prompt', 'What is this?', '--max-tokens', '3', '--temperature', '0', folder, '-o', out];
  const first = await batch(args);
  assert.equal(first.code, 2, first.stderr);  // some inputs failed
  const lines = readLines(out);
  assert.equal(lines.length, 4);
  const byName = Object.fromEntries(lines.map((l) => [path.basename(l.file), l]));
  assert.deepEqual(Object.keys(byName).sort(), ['corrupt.jpg', 'fake.png', 'scene.JPG', 'shapes.png']);
  for (const name of ['shapes.png', 'scene.JPG']) {
    const l = byName[name];
    assert.equal(l.id, l.file);
    assert.equal(typeof l.answer, 'string');
    assert.equal(l.usage.completion_tokens, 3);
    assert.ok(l.timings.image_tokens > 0 && l.timings.image_ms > 0);
    assert.equal(l.error, undefined);
  }
  assert.match(byName['fake.png'].error.message, /unsupported image format/);
  assert.ok(byName['corrupt.jpg'].error.message.length > 0);
  assert.match(first.stderr, /ignoring 1 files without an image, document or video extension/);
  assert.match(first.stderr, /done 2, failed 2, skipped 0/);
  assert.match(first.stderr, /images\/min/);
  // Again: everything is in the output already.
  const again = await batch(args);
  assert.equal(again.code, 0, again.stderr);
  assert.match(again.stderr, /done 0, failed 0, skipped 4/);
  assert.equal(readLines(out).length, 4);
});

test('interrupted twice, cut mid-line, resumed: every id exactly once', async () => {
  const folder = path.join(dir, 'many');
  fs.mkdirSync(folder);
  // Enough inputs that an interrupt after the first answer always finds some not yet started.
  const count = 30;
  const names = [];
  for (let i = 0; i < count; ++i) {
    const name = `img${String(i).padStart(2, '0')}.png`;
    copy(i % 2 ? 'a_ii_shapes_200x120.png' : 'a_iv_shapes_256x200.png', path.join(folder, name));
    names.push(name);
  }
  const out = path.join(dir, 'many.jsonl');
  // 800 tokens: an input runs for ~0.4 s, far longer than a signal takes to be sent and handled.
  const tokens = 800;
  const args = ['--prompt', 'Describe.', '--max-tokens', String(tokens), '--ignore-eos', '--temperature', '0',
    '--concurrency', '2', folder, '-o', out];
  // One SIGINT after the first answer: the running inputs finish and are written.
  let signalled = false;
  const first = await batch(args, {
    onLines: (n, proc) => { if (n >= 1 && !signalled) { signalled = true; proc.kill('SIGINT'); } },
  });
  assert.equal(first.code, 130, first.stderr);
  assert.match(first.stderr, /interrupted/);
  const afterFirst = readLines(out);
  assert.ok(afterFirst.length >= 1 && afterFirst.length < count, `${afterFirst.length} lines`);
  for (const l of afterFirst) assert.equal(l.usage.completion_tokens, tokens);  // finished, not cut
  // Two SIGINTs: the running inputs are stopped and not written. The second is sent once the
  // first is handled (two pending SIGINTs are delivered as one).
  let sent = 0;
  const second = await batch(args, {
    onLines: (n, proc, stderr) => {
      if (n >= 1 && sent === 0) { sent = 1; proc.kill('SIGINT'); }
      if (sent === 1 && /interrupted/.test(stderr)) { sent = 2; proc.kill('SIGINT'); }
    },
  });
  assert.equal(second.code, 130, second.stderr);
  assert.equal(sent, 2, second.stderr);
  const afterSecond = readLines(out);
  assert.ok(afterSecond.length > afterFirst.length && afterSecond.length < count,
    `${afterFirst.length} then ${afterSecond.length} lines`);
  for (const l of afterSecond) assert.equal(l.usage.completion_tokens, tokens);
  // A crash in the middle of a write leaves half a line.
  fs.appendFileSync(out, '{"id":"' + path.join(folder, names[count - 1]) + '","answer":"trunc');
  const last = await batch(args);
  assert.equal(last.code, 0, last.stderr);
  assert.match(last.stderr, /ended in half a line/);
  const lines = readLines(out);
  const ids = lines.map((l) => l.id).sort();
  assert.deepEqual(ids, names.map((n) => path.join(folder, n)).sort());
  for (const l of lines) assert.equal(l.usage.completion_tokens, tokens);
});

test('--requests: Batch API and bare lines, file:// images, per-line errors, logprobs', async () => {
  fs.mkdirSync(path.join(dir, 'req'));
  copy('a_v_square_97x61.png', path.join(dir, 'req', 'square.png'));
  const user = (content) => [{ role: 'user', content }];
  const lines = [
    { custom_id: 'a', method: 'POST', url: '/v1/chat/completions', body: { model: 'x', messages: user('Hi'), max_tokens: 2 } },
    { id: 'b', messages: user([{ type: 'image_url', image_url: { url: 'file://square.png' } }, { type: 'text', text: 'What?' }]), max_tokens: 2 },
    { id: 'c', messages: user('Hi'), logit_bias: { 1: 5 } },
    'this line is not JSON',
    { id: 'd', messages: user('Hi'), max_tokens: 2, logprobs: true, top_logprobs: 2 },
    { id: 'e', messages: user([{ type: 'image_url', image_url: { url: 'file://missing.png' } }]) },
  ];
  const file = path.join(dir, 'req', 'requests.jsonl');
  fs.writeFileSync(file, lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n') + '\n');
  const out = path.join(dir, 'req.jsonl');
  const run = await batch(['--requests', file, '--temperature', '0', '-o', out]);
  assert.equal(run.code, 2, run.stderr);
  const got = Object.fromEntries(readLines(out).map((l) => [l.id, l]));
  assert.deepEqual(Object.keys(got).sort(), ['a', 'b', 'c', 'd', 'e', 'line-4']);
  assert.equal(got.a.usage.completion_tokens, 2);
  assert.ok(got.b.timings.image_tokens > 0);
  assert.equal(got.c.error.param, 'logit_bias');
  assert.match(got['line-4'].error.message, /not a JSON object/);
  assert.equal(got.d.logprobs.length, 2);
  assert.equal(got.d.logprobs[0].top_logprobs.length, 2);
  assert.match(got.e.error.message, /missing\.png/);
  // Repeated ids are refused before anything runs.
  fs.writeFileSync(file, JSON.stringify(lines[1]) + '\n' + JSON.stringify(lines[1]) + '\n');
  const dup = await batch(['--requests', file, '-o', path.join(dir, 'dup.jsonl')]);
  assert.equal(dup.code, 1);
  assert.match(dup.stderr, /id 'b' is on lines 1 and 2/);
});

test('--json-schema: answers are parsed JSON that follows the schema', async () => {
  const schema = path.join(dir, 'schema.json');
  fs.writeFileSync(schema, JSON.stringify({
    type: 'object', properties: { shape: { type: 'string' } }, required: ['shape'], additionalProperties: false,
  }));
  const out = path.join(dir, 'schema.jsonl');
  const run = await batch(['--preset', 'describe', '--json-schema', schema, '--max-tokens', '40',
    '--temperature', '0', path.join(IMAGES, 'a_v_square_97x61.png'), '-o', out]);
  assert.equal(run.code, 0, run.stderr);
  const [line] = readLines(out);
  assert.equal(typeof line.answer, 'object');
  assert.deepEqual(Object.keys(line.answer), ['shape']);
  assert.equal(typeof line.answer.shape, 'string');
});
