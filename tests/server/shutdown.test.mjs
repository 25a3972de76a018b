// SIGTERM: stop accepting, let in-flight work finish within the grace period (or cancel it
// when the grace period is over), exit 0.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, chatBody, postJson } from './helpers.mjs';

async function openStream(server, maxTokens) {
  const res = await fetch(`${server.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ ...chatBody({ max_tokens: maxTokens }), stream: true }),
  });
  assert.equal(res.status, 200);
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let text = decoder.decode((await reader.read()).value);
  const rest = (async () => {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return text;
      text += decoder.decode(value);
    }
  })();
  return { rest };  // not the promise itself: `await openStream()` must not wait for the end
}

test('in-flight stream finishes, then exit 0', async () => {
  const server = await startServer(['--shutdown-grace', '60']);
  const streamed = (await openStream(server, 500)).rest;
  server.proc.kill('SIGTERM');
  const text = await streamed;
  assert.match(text, /"finish_reason":"length"/);
  assert.ok(text.endsWith('data: [DONE]\n\n'));
  const { code } = await server.exited;
  assert.equal(code, 0);
  // Nobody listens any more.
  await assert.rejects(fetch(`${server.url}/health`));
});

test('work still running after the grace period is cancelled, then exit 0', async () => {
  const server = await startServer(['--shutdown-grace', '0.2', '--ctx-size', '200000']);
  const streamed = (await openStream(server, 150000)).rest;
  const killed = Date.now();
  server.proc.kill('SIGTERM');
  const text = await streamed;
  assert.match(text, /"code":"shutting_down"/);
  const { code } = await server.exited;
  assert.equal(code, 0);
  console.log(`exited ${Date.now() - killed} ms after SIGTERM`);
});

test('SIGINT while idle exits 0; a request during loading gets 503', async () => {
  const server = await startServer([], { waitReady: false });
  const early = await postJson(server, '/v1/chat/completions', chatBody());
  // The model may already be loaded on a fast machine; while loading it must be 503.
  assert.ok([200, 503].includes(early.status));
  if (early.status === 503) assert.equal(early.json.error.code, 'model_loading');
  server.proc.kill('SIGINT');
  const { code } = await server.exited;
  assert.equal(code, 0);
});

test('--timeout cancels a request that runs past its deadline', async () => {
  const server = await startServer(['--timeout', '0.5', '--ctx-size', '200000']);
  const res = await postJson(server, '/v1/chat/completions', chatBody({ max_tokens: 150000 }));
  assert.equal(res.status, 504);
  assert.equal(res.json.error.code, 'timeout');
  assert.match(res.json.error.message, /--timeout/);
  const ok = await postJson(server, '/v1/chat/completions', chatBody());
  assert.equal(ok.status, 200);
  const { code } = await server.stop();
  assert.equal(code, 0);
});
