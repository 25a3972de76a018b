// Hostile requests against a real `qvl serve` (issue 14): the body limit holds on every framing
// and path, headers are bounded, framing is unambiguous, 100-continue is not granted to a body
// that will be refused, ranges do not amplify, cut streams are counted as such, the port is
// exclusive, and the page's assets are served in stored encodings.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import zlib from 'node:zlib';
import { QVL_BIN, MODEL_DIR, startServer, chatBody, rawRequest, statusOf } from './helpers.mjs';

const KEY = 'sk-hostile';
const MAX_BODY = 1 << 20;
let server;

before(async () => {
  server = await startServer(['--max-body-mb', '1', '--api-key', KEY, '--read-timeout', '2']);
});
after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0);
});

const peakRss = () => {
  const status = readFileSync(`/proc/${server.proc.pid}/status`, 'utf8');
  return Number(status.match(/VmHWM:\s+(\d+) kB/)[1]) * 1024;
};
const rss = () => {
  const status = readFileSync(`/proc/${server.proc.pid}/status`, 'utf8');
  return Number(status.match(/VmRSS:\s+(\d+) kB/)[1]) * 1024;
};

async function healthy() {
  const res = await fetch(`${server.url}/health`);
  assert.equal(res.status, 200);
}

// Writes `head`, then up to `total` body bytes in `piece`-sized writes as long as the server
// reads them; resolves with what it answered, how much was written, and how long it took.
function pushBody(head, { total, piece = 64 * 1024, chunked = false, timeoutMs = 20000 }) {
  return new Promise((resolve) => {
    const socket = net.connect(server.port, '127.0.0.1');
    const started = Date.now();
    let data = '', written = 0, done = false;
    const finish = (why) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ data, written, ms: Date.now() - started, why });
    };
    const timer = setTimeout(() => finish('timeout'), timeoutMs);
    socket.on('data', (d) => { data += d; if (/^HTTP\/1\.1 [2-5]\d\d/.test(data) && data.includes('\r\n\r\n')) finish('answered'); });
    socket.on('close', () => finish('closed'));
    socket.on('error', () => finish('error'));
    const block = Buffer.alloc(piece, 0x61);
    const framed = chunked ? Buffer.concat([Buffer.from(piece.toString(16) + '\r\n'), block, Buffer.from('\r\n')]) : block;
    const pump = () => {
      while (!done && written < total) {
        written += piece;
        if (!socket.write(framed)) { socket.once('drain', pump); return; }
      }
    };
    socket.on('connect', () => { socket.write(head); pump(); });
  });
}

test('item 1: a second server on the same port fails with "already in use" and exit 1', async () => {
  const second = spawn(QVL_BIN, ['serve', '-m', MODEL_DIR, '--host', '127.0.0.1', '--port', String(server.port)],
    { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  second.stderr.on('data', (d) => { stderr += d; });
  const timer = setTimeout(() => second.kill('SIGKILL'), 15000);
  const code = await new Promise((resolve) => second.on('exit', (c) => resolve(c)));
  clearTimeout(timer);
  assert.equal(code, 1, stderr);
  assert.match(stderr, new RegExp(`port ${server.port} is already in use`));
  await healthy();
});

test('item 2: the body limit holds on chunked bodies, before auth and on any path', async () => {
  const base = rss();
  const report = [];
  for (const [path, auth] of [['/v1/chat/completions', `Authorization: Bearer ${KEY}\r\n`], ['/v1/chat/completions', ''], ['/health', '']]) {
    const head = `POST ${path} HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`;
    const res = await pushBody(head, { total: 64 << 20, chunked: true });
    report.push(`${path}${auth ? ' (auth)' : ''}: ${statusOf(res.data)} after ${(res.written / 1048576).toFixed(1)} MiB written, ${res.ms} ms`);
    assert.ok([413, 401, 404].includes(statusOf(res.data)), `${path}: ${res.why} ${res.data.slice(0, 200)}`);
    if (auth) assert.equal(statusOf(res.data), 413);
    // Answered before the body ended (what is read after the refusal is dropped).
    assert.equal(res.why, 'answered', `${path}: ${res.why}`);
  }
  console.log(report.join('\n'));
  const grown = rss() - base;
  console.log(`resident memory grew ${(grown / 1048576).toFixed(1)} MiB`);
  assert.ok(grown < 8 * MAX_BODY, `resident memory grew ${grown} bytes`);
  await healthy();
});

test('item 2: compressed request bodies are refused with 415 without inflating them', async () => {
  const bomb = zlib.gzipSync(Buffer.alloc(64 << 20), { level: 9 });
  const before = rss();
  const res = await fetch(`${server.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'content-encoding': 'gzip', authorization: `Bearer ${KEY}` },
    body: bomb,
  });
  assert.equal(res.status, 415);
  assert.equal((await res.json()).error.code, 'unsupported_content_encoding');
  assert.ok(rss() - before < 8 * MAX_BODY);
  await healthy();
});

test('item 4: more than 100 headers or 32 KiB of headers get 431', async () => {
  const many = Array.from({ length: 101 }, (_, i) => `X-H${i}: v\r\n`).join('');
  const r1 = await rawRequest(server, `GET /health HTTP/1.1\r\nHost: x\r\n${many}\r\n`, { timeoutMs: 5000 });
  assert.equal(statusOf(r1.data), 431, r1.data.slice(0, 200));
  const r2 = await rawRequest(server, `GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(40 << 10)}\r\n\r\n`, { timeoutMs: 5000 });
  assert.equal(statusOf(r2.data), 431, r2.data.slice(0, 200));
  // Endless headers: the server stops reading at its header memory (431, though a client still
  // sending may see only the reset of the connection).
  const huge = await pushBody(`GET /health HTTP/1.1\r\nHost: x\r\nX-Big: `, { total: 64 << 20, timeoutMs: 10000 });
  assert.ok([0, 431].includes(statusOf(huge.data)), huge.data.slice(0, 200));
  assert.notEqual(huge.why, 'timeout');
  assert.ok(huge.written < 24 << 20, `${huge.written} header bytes were taken`);
  const ok = await rawRequest(server, `GET /health HTTP/1.1\r\nHost: x\r\n${many.split('\r\n').slice(0, 90).join('\r\n')}\r\nConnection: close\r\n\r\n`, { timeoutMs: 5000 });
  assert.equal(statusOf(ok.data), 200, ok.data.slice(0, 200));
});

test('item 6: many byte ranges do not amplify the answer', async () => {
  const page = await fetch(`${server.url}/`, { headers: { 'accept-encoding': 'identity' } });
  const size = (await page.arrayBuffer()).byteLength;
  const ranges = Array.from({ length: 2000 }, (_, i) => `${i}-${i + 1000}`).join(',');
  const res = await fetch(`${server.url}/`, { headers: { range: `bytes=${ranges}`, 'accept-encoding': 'identity' } });
  const body = await res.arrayBuffer();
  assert.ok([200, 206].includes(res.status));
  assert.ok(body.byteLength <= size, `${body.byteLength} bytes for a ${size}-byte page`);
});

test('item 7: ambiguous framing gets 400 and a close, unknown encodings 501, pipelining works', async () => {
  const auth = `Authorization: Bearer ${KEY}\r\n`;
  const post = (headers, body) => `POST /tokenize HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\n${headers}\r\n${body}`;
  const body = '{"content":"hi"}';
  const cases = [
    ['Content-Length with chunked', post(`Content-Length: ${body.length}\r\nTransfer-Encoding: chunked\r\n`, body), 400],
    ['two different Content-Lengths', post(`Content-Length: ${body.length}\r\nContent-Length: ${body.length + 1}\r\n`, body + ' '), 400],
    ['+N Content-Length', post(`Content-Length: +${body.length}\r\n`, body), 400],
    ['unknown Transfer-Encoding', post('Transfer-Encoding: gzip\r\n', body), 501],
    ['chunked not last', post('Transfer-Encoding: chunked, gzip\r\n', body), 501],
    ['space before colon', post(`Content-Length : ${body.length}\r\n`, body), 400],
    ['header line without colon', post(`Content-Length: ${body.length}\r\nNoColonHere\r\n`, body), 400],
  ];
  for (const [name, payload, status] of cases) {
    // Our side stays open: a close must come from the server.
    const res = await rawRequest(server, payload, { timeoutMs: 5000 });
    assert.equal(statusOf(res.data), status, `${name}: ${res.data.slice(0, 300)}`);
    assert.equal(res.timedOut, false, `${name}: the connection was left open`);
    assert.equal((res.data.match(/HTTP\/1\.1 \d{3}/g) || []).length >= 1, true);
    assert.doesNotMatch(res.data, /HTTP\/1\.1 200/, `${name}: a smuggled request was answered`);
  }
  const pipelined = ['/health', '/v1/models', '/health'].map((p, i) =>
    `GET ${p} HTTP/1.1\r\nHost: x\r\n${auth}${i === 2 ? 'Connection: close\r\n' : ''}\r\n`).join('');
  const res = await rawRequest(server, pipelined, { timeoutMs: 5000 });
  const statuses = [...res.data.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => Number(m[1]));
  assert.deepEqual(statuses, [200, 200, 200], res.data.slice(0, 500));
  assert.ok(res.data.indexOf('"status":"ok"') < res.data.indexOf('"object":"list"'), 'answers out of order');
});

test('item 8: Expect: 100-continue is refused at once with 413 or 401', async () => {
  for (const [auth, status] of [[`Authorization: Bearer ${KEY}\r\n`, 413], ['', 401]]) {
    const length = auth ? 50 << 20 : 1000;
    const started = Date.now();
    const res = await rawRequest(server, `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Length: ${length}\r\nExpect: 100-continue\r\n\r\n`, { timeoutMs: 5000 });
    const ms = Date.now() - started;
    assert.equal(statusOf(res.data), status, res.data.slice(0, 200));
    assert.doesNotMatch(res.data, /100 Continue/);
    assert.ok(ms < 1000, `answered after ${ms} ms`);
  }
});

test('item 9: a stream the client cuts is counted as 499, not 200', async () => {
  const count = async (status) => {
    const text = await (await fetch(`${server.url}/metrics`)).text();
    const line = text.split('\n').find((l) => l.startsWith(`qvl_requests_total{endpoint="/v1/chat/completions",status="${status}"}`));
    return line ? Number(line.split(' ')[1]) : 0;
  };
  const before200 = await count(200), before499 = await count(499);
  const controller = new AbortController();
  const res = await fetch(`${server.url}/v1/chat/completions`, {
    method: 'POST', signal: controller.signal,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
    body: JSON.stringify(chatBody({ max_tokens: 400, stream: true })),
  });
  assert.equal(res.status, 200);
  const reader = res.body.getReader();
  await reader.read();
  controller.abort();
  const end = Date.now() + 20000;
  while (await count(499) === before499 && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
  assert.equal(await count(499), before499 + 1);
  assert.equal(await count(200), before200);
});

test('item 13: web assets are served in stored encodings with per-encoding ETags', async () => {
  const html = await (await fetch(`${server.url}/`, { headers: { 'accept-encoding': 'identity' } })).text();
  const script = html.match(/src="(\/assets\/app\.[0-9a-f]+\.js)"/)[1];
  const plain = Buffer.from(await (await fetch(`${server.url}${script}`, { headers: { 'accept-encoding': 'identity' } })).arrayBuffer());
  const raw = (encoding, extra = {}) => new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const req = (require_http()).get(`${server.url}${script}`, { headers: { 'accept-encoding': encoding, ...extra } }, (res) => {
      const parts = [];
      res.on('data', (d) => parts.push(d));
      res.on('end', () => resolve({ res, body: Buffer.concat(parts), ms: Number(process.hrtime.bigint() - started) / 1e6 }));
    });
    req.on('error', reject);
  });
  const br = await raw('gzip, deflate, br');
  assert.equal(br.res.headers['content-encoding'], 'br');
  assert.ok(zlib.brotliDecompressSync(br.body).equals(plain));
  const gz = await raw('gzip');
  assert.equal(gz.res.headers['content-encoding'], 'gzip');
  assert.ok(zlib.gunzipSync(gz.body).equals(plain));
  assert.match(br.res.headers.vary, /Accept-Encoding/i);
  assert.notEqual(br.res.headers.etag, gz.res.headers.etag);
  const revalidated = await raw('gzip, deflate, br', { 'if-none-match': br.res.headers.etag });
  assert.equal(revalidated.res.statusCode, 304);
  // Stored, not compressed per request: every fetch is fast (brotli at quality 11 per request
  // took hundreds of ms for this script).
  const times = [];
  for (let i = 0; i < 7; i++) times.push((await raw('gzip, deflate, br')).ms);
  times.sort((a, b) => a - b);
  console.log(`script ${plain.length} B, br ${br.body.length} B, gzip ${gz.body.length} B; median fetch ${times[3].toFixed(1)} ms`);
  assert.ok(times[3] < 60, `median fetch took ${times[3]} ms`);
});

import http from 'node:http';
function require_http() { return http; }
