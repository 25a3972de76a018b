// Shared helpers for the server integration tests: start `qvl serve --port 0` on loopback with
// the tiny test model, wait until it is ready, stop it.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';

// Usage: node <script>.test.mjs <qvl binary> <model dir> (or QVL_BIN / QVL_TEST_MODEL).
export const QVL_BIN = process.argv[2] || process.env.QVL_BIN;
export const MODEL_DIR = process.argv[3] || process.env.QVL_TEST_MODEL;
if (!QVL_BIN || !MODEL_DIR) throw new Error('usage: node <test>.mjs <qvl binary> <model dir>');

export function imageDataUri(name) {
  const bytes = readFileSync(path.join(MODEL_DIR, 'images', name));
  const mime = name.endsWith('.jpg') ? 'image/jpeg' : 'image/png';
  return `data:${mime};base64,${bytes.toString('base64')}`;
}

export async function startServer(extraArgs = [], { waitReady = true, modelDir = MODEL_DIR } = {}) {
  const args = ['serve', '-m', modelDir, '--host', '127.0.0.1', '--port', '0', ...extraArgs];
  const proc = spawn(QVL_BIN, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  proc.stderr.on('data', (d) => { stderr += d; });
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
  const port = await new Promise((resolve, reject) => {
    let out = '';
    proc.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/listening on http:\/\/[^:]+:(\d+)/);
      if (m) resolve(Number(m[1]));
    });
    exited.then(({ code }) => reject(new Error(`server exited (${code}) before listening: ${stderr}`)));
  });
  const server = {
    proc, port, exited,
    url: `http://127.0.0.1:${port}`,
    stderr: () => stderr,
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      return exited;
    },
  };
  if (waitReady) await waitForHealth(server);
  return server;
}

export async function waitForHealth(server, timeoutMs = 60000) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const res = await fetch(`${server.url}/health`).catch(() => null);
    if (res && res.status === 200) return;
    if (Date.now() > end) throw new Error('server did not become ready: ' + server.stderr());
    await new Promise((r) => setTimeout(r, 50));
  }
}

export async function postJson(server, route, body, headers = {}) {
  const res = await fetch(`${server.url}${route}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { status: res.status, headers: res.headers, text, json };
}

export function chatBody(extra = {}) {
  return { model: 'tiny', messages: [{ role: 'user', content: 'Say hi.' }], max_tokens: 2, ...extra };
}

// Sends raw bytes on a fresh TCP connection and returns everything the server answered until
// it closed the connection (or `timeoutMs` passed). `keepOpen` leaves our side open after
// writing, like a slow or stalled client.
export function rawRequest(server, payload, { timeoutMs = 20000, keepOpen = true } = {}) {
  return new Promise((resolve) => {
    const socket = net.connect(server.port, '127.0.0.1');
    let data = '';
    const timer = setTimeout(() => { socket.destroy(); resolve({ data, timedOut: true }); }, timeoutMs);
    socket.on('data', (d) => { data += d; });
    socket.on('close', () => { clearTimeout(timer); resolve({ data, timedOut: false }); });
    socket.on('error', () => {});
    socket.on('connect', () => {
      if (payload) socket.write(payload);
      if (!keepOpen) socket.end();
    });
  });
}

export function statusOf(raw) {
  const m = raw.match(/^HTTP\/1\.[01] (\d{3})/);
  return m ? Number(m[1]) : 0;
}

// Reads an SSE response body into its `data:` payloads.
export async function readSse(res) {
  const text = await res.text();
  return text.split('\n\n').filter((e) => e.startsWith('data: ')).map((e) => e.slice(6));
}

export async function metricValue(server, name) {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(name + ' '));
  return line ? Number(line.split(' ')[1]) : NaN;
}

// Polls /metrics until `name` reads `want` (a loaded machine is slow: never sleep a fixed time);
// throws naming the metric and its last value after timeoutMs.
export async function waitForMetric(server, name, want, timeoutMs = 30000) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await metricValue(server, name);
    if (value === want) return;
    if (Date.now() >= end) throw new Error(`${name} is ${value}, not ${want}, after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

// An open connection we control; `closed` resolves with what the server sent before closing.
export function open(server, first = '') {
  const socket = net.connect(server.port, '127.0.0.1');
  let data = '';
  const closed = new Promise((resolve) => {
    socket.on('close', () => resolve(data));
    socket.on('error', () => {});
  });
  socket.on('data', (d) => { data += d; });
  const connected = new Promise((resolve) => socket.on('connect', resolve));
  if (first) connected.then(() => socket.write(first));
  return { socket, closed, connected, data: () => data };
}

// Sends one more header line every `everyMs` (a slow-loris client) until stopped.
export function trickle(server, everyMs) {
  const c = open(server, 'GET /health HTTP/1.1\r\nHost: x\r\n');
  let i = 0;
  const timer = setInterval(() => { if (!c.socket.destroyed) c.socket.write(`X-Slow-${i++}: y\r\n`); }, everyMs);
  c.closed.then(() => clearInterval(timer));
  return { ...c, stop: () => { clearInterval(timer); c.socket.destroy(); } };
}

export const halfBody = (server) => open(server,
  'POST /tokenize HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"content":"');
