// Scheduling: parallel streams all complete, overload gets 429 with Retry-After, a client that
// disconnects frees its slot, and the metrics follow.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, postJson, chatBody, readSse, metricValue } from './helpers.mjs';

const PARALLEL = 2;
const QUEUE = 2;
let server;

before(async () => {
  server = await startServer(['--parallel', String(PARALLEL), '--queue', String(QUEUE), '--ctx-size', '100000']);
});

after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0);
});

function stream(body, signal) {
  return fetch(`${server.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ ...body, stream: true, stream_options: { include_usage: true } }),
    signal,
  });
}

async function waitFor(predicate, what, timeoutMs = 30000) {
  const end = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('N parallel streams all complete', async () => {
  const N = PARALLEL + QUEUE;
  const TOKENS = 40;
  const started = Date.now();
  const results = await Promise.all(Array.from({ length: N }, async (_, i) => {
    const res = await stream(chatBody({ max_tokens: TOKENS, messages: [{ role: 'user', content: `Request ${i}` }] }));
    assert.equal(res.status, 200);
    const events = await readSse(res);
    assert.equal(events[events.length - 1], '[DONE]');
    const usage = JSON.parse(events[events.length - 2]).usage;
    assert.equal(usage.completion_tokens, TOKENS);
    return usage;
  }));
  const seconds = (Date.now() - started) / 1000;
  const tokens = results.reduce((sum, u) => sum + u.completion_tokens, 0);
  console.log(`${N} streams x ${TOKENS} tokens with --parallel ${PARALLEL}: ${seconds.toFixed(2)} s, ${(tokens / seconds).toFixed(0)} tokens/s overall`);
  assert.equal(await metricValue(server, 'qvl_active_requests'), 0);
});

test('overload gets 429, disconnecting frees the slots', async () => {
  const controllers = [];
  const pending = [];
  // Fill every slot and the queue with long streams.
  for (let i = 0; i < PARALLEL + QUEUE; i++) {
    const controller = new AbortController();
    controllers.push(controller);
    pending.push(stream(chatBody({ max_tokens: 50000 }), controller.signal).catch(() => null));
  }
  await waitFor(async () => (await metricValue(server, 'qvl_active_requests')) === PARALLEL &&
    (await metricValue(server, 'qvl_queue_depth')) === QUEUE, 'full slots and queue');
  const rejected = await postJson(server, '/v1/chat/completions', chatBody());
  assert.equal(rejected.status, 429);
  assert.equal(rejected.headers.get('retry-after'), '1');
  assert.equal(rejected.json.error.code, 'rate_limit_exceeded');
  assert.equal(rejected.json.error.type, 'rate_limit_error');

  // Read a little of one running stream, then hang up on everything. Which requests got the
  // slots depends on arrival order at the server, so take whichever stream answers first (a
  // queued one sends no headers until a slot frees).
  const first = await Promise.race(pending);
  const reader = first.body.getReader();
  await reader.read();
  const completedBefore = await metricValue(server, 'qvl_completion_tokens_total');
  const hungUp = Date.now();
  for (const c of controllers) c.abort();
  await waitFor(async () => (await metricValue(server, 'qvl_active_requests')) === 0 &&
    (await metricValue(server, 'qvl_queue_depth')) === 0, 'slots to be freed');
  console.log(`slots freed ${Date.now() - hungUp} ms after the clients hung up`);
  // Cancelled streams did not run to 50000 tokens.
  assert.equal(await metricValue(server, 'qvl_completion_tokens_total'), completedBefore);
  const ok = await postJson(server, '/v1/chat/completions', chatBody());
  assert.equal(ok.status, 200);
});

test('a non-streaming client that disconnects is cancelled too', async () => {
  const controller = new AbortController();
  const request = fetch(`${server.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(chatBody({ max_tokens: 50000 })),
    signal: controller.signal,
  }).catch(() => null);
  await waitFor(async () => (await metricValue(server, 'qvl_active_requests')) === 1, 'the request to start');
  controller.abort();
  await request;
  await waitFor(async () => (await metricValue(server, 'qvl_active_requests')) === 0, 'the slot to be freed');
  const metrics = await (await fetch(`${server.url}/metrics`)).text();
  assert.match(metrics, /qvl_requests_total\{endpoint="\/v1\/chat\/completions",status="429"\} 1/);
  assert.match(metrics, /qvl_time_to_first_token_seconds_count [1-9]/);
  assert.match(metrics, /process_resident_memory_bytes [1-9]/);
  assert.match(metrics, /qvl_process_cpu_utilization /);
});
