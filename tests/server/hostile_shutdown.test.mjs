// Shutdown against hostile clients (issue 14, item 5): SIGTERM ends in bounded time whatever
// clients do, and a second signal exits at once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, chatBody, statusOf, open, trickle, halfBody } from './helpers.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

test('item 5: SIGTERM with idle, trickling and half-sent clients exits 0 at once', async () => {
  const server = await startServer(['--shutdown-grace', '20']);
  const clients = [open(server), trickle(server, 300), halfBody(server)];
  await Promise.all(clients.map((c) => c.connected));
  await sleep(200);
  const t0 = performance.now();
  server.proc.kill('SIGTERM');
  const exited = await Promise.race([server.exited, sleep(8000).then(() => null)]);
  const ms = performance.now() - t0;
  if (!exited) server.proc.kill('SIGKILL');
  console.log(`exit ${exited && exited.code} ${ms.toFixed(0)} ms after SIGTERM`);
  assert.ok(exited, 'still running 8 s after SIGTERM');
  assert.equal(exited.code, 0);
  assert.ok(ms < 2000, `exited ${ms} ms after SIGTERM`);
  const halfAnswer = await clients[2].closed;
  assert.ok([0, 503].includes(statusOf(halfAnswer)), halfAnswer.slice(0, 200));
  for (const c of clients) c.stop ? c.stop() : c.socket.destroy();
});

test('item 5: a generation past the grace period is cut; exit within grace + 2 s', async () => {
  const grace = 2;
  const server = await startServer(['--shutdown-grace', String(grace), '--ctx-size', '200000']);
  const res = await fetch(`${server.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify(chatBody({ max_tokens: 150000, stream: true })),
  });
  const reader = res.body.getReader();
  await reader.read();
  const slow = trickle(server, 300);
  const t0 = performance.now();
  server.proc.kill('SIGTERM');
  const exited = await Promise.race([server.exited, sleep((grace + 8) * 1000).then(() => null)]);
  const ms = performance.now() - t0;
  if (!exited) server.proc.kill('SIGKILL');
  console.log(`exit ${exited && exited.code} ${ms.toFixed(0)} ms after SIGTERM (grace ${grace} s)`);
  slow.stop();
  reader.cancel().catch(() => {});
  assert.ok(exited);
  assert.equal(exited.code, 0);
  assert.ok(ms < (grace + 2) * 1000, `exited ${ms} ms after SIGTERM`);
});

test('item 5: a second signal exits at once', async () => {
  const server = await startServer(['--shutdown-grace', '60', '--ctx-size', '200000']);
  const res = await fetch(`${server.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify(chatBody({ max_tokens: 150000, stream: true })),
  });
  const reader = res.body.getReader();
  await reader.read();
  server.proc.kill('SIGTERM');
  await sleep(300);
  const t0 = performance.now();
  server.proc.kill('SIGTERM');
  const exited = await Promise.race([server.exited, sleep(5000).then(() => null)]);
  const ms = performance.now() - t0;
  if (!exited) server.proc.kill('SIGKILL');
  reader.cancel().catch(() => {});
  assert.ok(exited, 'the second SIGTERM was ignored');
  assert.ok(ms < 1000, `exited ${ms} ms after the second signal`);
  assert.notEqual(exited.code, 0);
});
