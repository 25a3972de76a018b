// `qvl run --json --logprobs N`: one entry per generated token in OpenAI's shape, from the model's
// own distribution (the first position's alternatives do not depend on temperature or penalties).
// Usage: node run_logprobs.test.mjs <qvl binary> <model dir>
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';

const [QVL, MODEL] = process.argv.slice(2);
if (!QVL || !MODEL) throw new Error('usage: node run_logprobs.test.mjs <qvl binary> <model dir>');

function run(args) {
  const r = spawnSync(QVL, ['--log-level', 'warn', 'run', '-m', MODEL, ...args, 'Name a colour.'],
    { encoding: 'utf8' });
  return { code: r.status, stderr: r.stderr, json: r.status === 0 ? JSON.parse(r.stdout) : null };
}

test('greedy: entries per token, the chosen token is the top alternative', () => {
  const { code, stderr, json } = run(['--json', '--logprobs', '3', '--temperature', '0', '--max-tokens', '4']);
  assert.equal(code, 0, stderr);
  assert.equal(json.logprobs.length, json.completion_ids.length);
  for (const e of json.logprobs) {
    assert.equal(e.top_logprobs.length, 3);
    assert.equal(e.top_logprobs[0].logprob, e.logprob);
    assert.deepEqual(e.top_logprobs[0].bytes, e.bytes);
    assert.ok(e.logprob <= 0);
  }
  // Sampling hot with penalties: the first position's distribution is still the model's.
  const hot = run(['--json', '--logprobs', '3', '--temperature', '1.8', '--seed', '3',
    '--repetition-penalty', '1.5', '--max-tokens', '1']);
  assert.equal(hot.code, 0, hot.stderr);
  const [a, b] = [json.logprobs[0].top_logprobs, hot.json.logprobs[0].top_logprobs];
  assert.deepEqual(a.map((t) => t.bytes), b.map((t) => t.bytes));
  a.forEach((t, i) => assert.ok(Math.abs(t.logprob - b[i].logprob) < 1e-4));
});

test('bad uses are refused', () => {
  assert.notEqual(run(['--logprobs', '2']).code, 0);  // needs --json
  assert.notEqual(run(['--json', '--logprobs', '21']).code, 0);
});
