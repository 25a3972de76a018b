// Hostile connections against a real `qvl serve` (issue 14, item 3): idle, trickling and
// half-sent connections cost no worker and are closed on their deadlines, caps refuse cleanly,
// and a normal client keeps its latency under attack.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { startServer, chatBody, postJson, statusOf, open, trickle, halfBody } from './helpers.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function timed(fn) {
  const started = performance.now();
  const result = await fn();
  return { ms: performance.now() - started, result };
}

const rssMiB = (pid) => Number(readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmRSS:\s+(\d+)/)[1]) / 1024;

test('item 3: 512 idle + 64 trickling + 64 half-sent connections do not slow a normal client', async () => {
  const server = await startServer(['--read-timeout', '30']);
  try {
    const health = () => timed(() => fetch(`${server.url}/health`).then((r) => r.status));
    const chat = () => timed(() => postJson(server, '/v1/chat/completions', chatBody()).then((r) => r.status));
    await chat();
    const calm = { health: (await health()).ms, chat: (await chat()).ms };
    const rssBefore = rssMiB(server.proc.pid);
    const attackers = [];
    for (let i = 0; i < 512; i++) attackers.push(open(server));
    for (let i = 0; i < 64; i++) attackers.push(trickle(server, 1000));
    for (let i = 0; i < 64; i++) attackers.push(halfBody(server));
    await Promise.all(attackers.map((a) => a.connected));
    await sleep(300);
    const underAttack = [];
    for (let i = 0; i < 5; i++) {
      const h = await health();
      const c = await chat();
      assert.equal(h.result, 200);
      assert.equal(c.result, 200);
      underAttack.push({ health: h.ms, chat: c.ms });
    }
    const worst = { health: Math.max(...underAttack.map((x) => x.health)), chat: Math.max(...underAttack.map((x) => x.chat)) };
    const grown = rssMiB(server.proc.pid) - rssBefore;
    console.log(`calm: health ${calm.health.toFixed(1)} ms, chat ${calm.chat.toFixed(1)} ms; ` +
      `under attack (worst of 5): health ${worst.health.toFixed(1)} ms, chat ${worst.chat.toFixed(1)} ms; ` +
      `resident memory +${grown.toFixed(1)} MiB for ${attackers.length} connections`);
    assert.ok(worst.health < 1000, `health took ${worst.health} ms under attack`);
    assert.ok(worst.chat < calm.chat + 1000, `chat took ${worst.chat} ms under attack (calm ${calm.chat})`);
    assert.ok(grown < 128, `resident memory grew ${grown} MiB`);
    for (const a of attackers) a.stop ? a.stop() : a.socket.destroy();
  } finally {
    const { code } = await server.stop();
    assert.equal(code, 0);
  }
});

test('item 3: header deadline, body minimum rate and connection caps', async () => {
  const server = await startServer(['--read-timeout', '2', '--min-body-rate', '1',
    '--max-connections', '40', '--max-connections-per-ip', '24']);
  try {
    // A trickling head is cut at the header deadline even though it never pauses 2 s.
    const slow = trickle(server, 200);
    const t0 = performance.now();
    await slow.closed;
    const headerCut = performance.now() - t0;
    assert.ok(headerCut > 1500 && headerCut < 5000, `trickling head closed after ${headerCut} ms`);

    // A body trickling below the minimum rate gets 408.
    const body = open(server, 'POST /tokenize HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n');
    const timer = setInterval(() => { if (!body.socket.destroyed) body.socket.write('a'); }, 100);
    const t1 = performance.now();
    const answer = await body.closed;
    clearInterval(timer);
    assert.equal(statusOf(answer), 408, answer.slice(0, 200));
    assert.ok(performance.now() - t1 < 8000);

    // Per address: the 25th connection is answered 503 and closed.
    const held = [];
    for (let i = 0; i < 24; i++) held.push(open(server));
    await Promise.all(held.map((c) => c.connected));
    await sleep(200);
    const extra = open(server);
    const refused = await Promise.race([extra.closed, sleep(5000).then(() => 'timeout')]);
    assert.equal(statusOf(refused), 503, refused.slice(0, 200));
    assert.match(refused, /too_many_connections/);
    for (const c of held) c.socket.destroy();
    await sleep(300);
    const ok = await fetch(`${server.url}/health`);
    assert.equal(ok.status, 200);
  } finally {
    const { code } = await server.stop();
    assert.equal(code, 0);
  }
});

