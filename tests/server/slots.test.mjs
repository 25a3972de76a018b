// A request's generation slot frees when its generation ends, not when the last byte of its
// stream reached the client: a client that reads slowly must not keep the next request (its own
// follow-up or another client's) at 429.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { startServer, postJson, chatBody, metricValue } from './helpers.mjs';

let server;

before(async () => {
  // One slot, no queue: a second request while the slot is held gets 429 at once. The write
  // timeout outlasts the test, so the stalled stream below is never dropped by the server.
  server = await startServer(['--parallel', '1', '--queue', '0', '--write-timeout', '600',
    '--ctx-size', '100000']);
});

after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0);
});

test('the slot frees when generation ends, while a stalled client still has its stream to read', async () => {
  // ~4 MB of events (every token with 20 alternatives) that this client does not read: more than
  // the server's pending limit and the sockets' buffers take, so the server cannot hand over the
  // end of the stream before we read on (1500 tokens fit, and then this test could not fail).
  const TOKENS = 3000;
  const body = JSON.stringify(chatBody({ max_tokens: TOKENS, stream: true, logprobs: true, top_logprobs: 20 }));
  const socket = net.connect(server.port, '127.0.0.1');
  let received = 0, text = '';
  socket.on('data', (d) => { received += d.length; text = (text + d.toString('latin1')).slice(-64); });
  await new Promise((resolve) => socket.once('connect', resolve));
  socket.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
  try {
    // Wait until it generates, then stop reading.
    const end = Date.now() + 240000;
    while (received === 0) {
      assert.ok(Date.now() < end, 'the stream did not start');
      await new Promise((r) => setTimeout(r, 10));
    }
    socket.pause();

    // The slot must come back once the answer is generated (the tiny model needs seconds).
    let status = 0;
    while (Date.now() < end) {
      const res = await postJson(server, '/v1/chat/completions', chatBody());
      status = res.status;
      if (status !== 429) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(status, 200, 'a new request still gets 429 after the first one was generated');
    // The stalled stream was not delivered yet (so the slot came back before its end), and it
    // still completes once read.
    assert.ok(!text.includes('[DONE]'), 'the client had already received the whole stream');
    socket.resume();
    const done = Date.now() + 60000;
    while (!text.includes('[DONE]')) {
      assert.ok(Date.now() < done, 'the stalled stream did not complete once read');
      await new Promise((r) => setTimeout(r, 20));
    }
  } finally {
    socket.destroy();
  }
  assert.equal(await metricValue(server, 'qvl_active_requests'), 0);
});
