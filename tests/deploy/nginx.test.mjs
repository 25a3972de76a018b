// nginx in front of two qvl replicas, with deploy/nginx/qvl.conf as shipped (only its listen
// address and the replica list are the test's): conversation affinity by X-Session-Id, then one
// replica is killed (SIGKILL) while streams and non-streamed requests run through nginx, then
// restarted on the same port. Checks: no non-streamed request fails, streams on the killed
// replica end promptly (cut, no [DONE]), streams on the survivor complete, the survivor serves
// the rest, and the restarted replica gets traffic again (time to rejoin printed).
// Usage: node nginx.test.mjs QVL_BINARY MODEL_DIR WORK_DIR. Exit 77 = skipped (no nginx).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';

const [qvlBin, modelDir, workDir] = process.argv.slice(2);
const repo = new URL('../../', import.meta.url).pathname;
const nginxBin = ['/usr/sbin/nginx', '/usr/local/sbin/nginx', '/usr/bin/nginx'].find(existsSync);
if (!nginxBin) {
  console.log('SKIP: nginx is not installed (scripts/setup.sh installs it)');
  process.exit(77);
}
const children = new Set();
// nginx gets SIGTERM (its master then stops the workers); replicas SIGKILL.
const stopAll = () => { for (const c of children) c.kill(c.isNginx ? 'SIGTERM' : 'SIGKILL'); };
process.on('exit', stopAll);

function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

async function until(what, check, timeoutMs = 30000) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function startReplica(port = 0, slots = ['--parallel', '8', '--queue', '32']) {
  const proc = spawn(qvlBin, ['serve', '-m', modelDir, '--host', '127.0.0.1', '--port', String(port),
    '--threads', '1', ...slots, '--shutdown-grace', '30'],
  { stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(proc);
  let stderr = '';
  proc.stderr.on('data', (d) => { stderr += d; });
  const exited = new Promise((r) => proc.on('exit', (code, signal) => { children.delete(proc); r({ code, signal }); }));
  const bound = await new Promise((resolve, reject) => {
    let out = '';
    proc.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/listening on http:\/\/[^:]+:(\d+)/);
      if (m) resolve(Number(m[1]));
    });
    exited.then(({ code }) => reject(new Error(`replica exited (${code}): ${stderr}`)));
  });
  const replica = { proc, exited, port: bound, addr: `127.0.0.1:${bound}`, stderr: () => stderr };
  await until('replica /health', async () =>
    (await fetch(`http://${replica.addr}/health`).catch(() => null))?.status === 200);
  return replica;
}

// nginx with the shipped config: a private prefix (pid, temp dirs) under the build folder.
async function startNginx(replicas) {
  const prefix = path.join(workDir, `nginx-${process.pid}`);
  rmSync(prefix, { recursive: true, force: true });
  mkdirSync(path.join(prefix, 'tmp'), { recursive: true });
  const port = await freePort();
  const shipped = readFileSync(path.join(repo, 'deploy/nginx/qvl.conf'), 'utf8');
  assert.equal(shipped.match(/^\s*listen 80;$/gm)?.length, 1);
  writeFileSync(path.join(prefix, 'qvl.conf'), shipped.replace(/listen 80;/, `listen 127.0.0.1:${port};`));
  // The shipped replica lines with the test's addresses.
  const template = readFileSync(path.join(repo, 'deploy/nginx/qvl-replicas.conf'), 'utf8')
    .split('\n').filter((l) => l.startsWith('server '));
  writeFileSync(path.join(prefix, 'qvl-replicas.conf'),
    replicas.map((r, i) => template[i].replace(/server \S+/, `server ${r.addr}`)).join('\n') + '\n');
  writeFileSync(path.join(prefix, 'nginx.conf'), `daemon off;
worker_processes 1;
pid nginx.pid;
error_log stderr warn;
events { worker_connections 512; }
http {
  access_log off;
  client_body_temp_path tmp/body;
  proxy_temp_path tmp/proxy;
  fastcgi_temp_path tmp/fastcgi;
  uwsgi_temp_path tmp/uwsgi;
  scgi_temp_path tmp/scgi;
  include qvl.conf;
}
`);
  const conf = path.join(prefix, 'nginx.conf');
  execFileSync(nginxBin, ['-t', '-q', '-p', prefix, '-c', conf, '-e', 'stderr']);
  const proc = spawn(nginxBin, ['-p', prefix, '-c', conf, '-e', 'stderr'], { stdio: ['ignore', 'ignore', 'pipe'] });
  proc.isNginx = true;
  children.add(proc);
  let log = '';
  proc.stderr.on('data', (d) => { log += d; });
  const url = `http://127.0.0.1:${port}`;
  await until('nginx', async () => (await fetch(`${url}/health`).catch(() => null))?.status === 200);
  return { proc, url, log: () => log, prefix };
}

const body = (maxTokens, stream = false) => JSON.stringify({
  model: 'tiny', messages: [{ role: 'user', content: 'Tell me a long story.' }],
  max_tokens: maxTokens, stream,
});
// The replica that finally answered: nginx lists every one it tried ("a, b" after a failover).
const lastReplica = (res) => (res.headers.get('x-qvl-replica') || '').split(', ').pop();

async function chat(url, { session, maxTokens = 8 } = {}) {
  const headers = { 'content-type': 'application/json' };
  if (session) headers['x-session-id'] = session;
  const started = Date.now();
  try {
    const res = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers, body: body(maxTokens) });
    const json = await res.json().catch(() => null);
    return { started, status: res.status, ok: res.status === 200 && !!json?.choices,
      replica: lastReplica(res), tried: res.headers.get('x-qvl-replica') };
  } catch (error) {
    return { started, status: 0, ok: false, error: String(error) };
  }
}

async function openStream(url, session, maxTokens) {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json', 'x-session-id': session },
    body: body(maxTokens, true),
  });
  assert.equal(res.status, 200);
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  const s = { replica: lastReplica(res), text: '', chunks: 0, ended: null, endedAt: 0 };
  s.firstChunk = reader.read().then(({ value }) => { s.text += decoder.decode(value); s.chunks++; });
  s.done = s.firstChunk.then(async () => {
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        s.text += decoder.decode(value);
        s.chunks++;
      }
      s.ended = s.text.includes('data: [DONE]') ? 'done' : 'closed';
    } catch {
      s.ended = 'error';
    }
    s.endedAt = Date.now();
  });
  return s;
}

async function metric(addr, name) {
  const text = await (await fetch(`http://${addr}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(name + ' '));
  return line ? Number(line.split(' ')[1]) : NaN;
}

let replicas;
let drainSession;  // a session whose home is replicas[0]
let nginx;
after(async () => {
  const exits = [...children].map((c) => new Promise((r) => (c.exitCode !== null ? r() : c.on('exit', r))));
  stopAll();
  await Promise.all(exits);
});

test('nginx in front of two replicas: affinity, failover, rejoin', { timeout: 150000 }, async () => {
  mkdirSync(workDir, { recursive: true });
  replicas = [await startReplica(), await startReplica()];
  nginx = await startNginx(replicas);
  const addrs = replicas.map((r) => r.addr);

  // Affinity: a session id always lands on the same replica; ids spread over both.
  const home = new Map();
  await Promise.all(Array.from({ length: 24 }, async (_, i) => {
    const res = await chat(nginx.url, { session: `conversation-${i}`, maxTokens: 2 });
    assert.ok(res.ok, JSON.stringify(res));
    home.set(`conversation-${i}`, res.replica);
  }));
  for (const [session, replica] of [...home].slice(0, 8)) {
    for (let k = 0; k < 3; k++) assert.equal((await chat(nginx.url, { session, maxTokens: 2 })).replica, replica);
  }
  const sessionOn = (addr) => [...home].find(([, r]) => r === addr)?.[0];
  const [victim, survivor] = replicas;
  const victimSession = sessionOn(victim.addr);
  const survivorSession = sessionOn(survivor.addr);
  assert.ok(victimSession && survivorSession, `sessions spread over both replicas: ${[...home.values()]}`);
  console.log(`affinity: 24 sessions -> ${addrs.map((a) => [...home.values()].filter((r) => r === a).length).join(' + ')} ` +
    'per replica, repeated requests always on the same replica');

  // Load: streams pinned to each replica, long non-streamed requests pinned to the victim,
  // and a steady flow of short requests without a session (least_conn).
  const streams = [
    ...(await Promise.all([0, 1].map(() => openStream(nginx.url, victimSession, 1500)))),
    ...(await Promise.all([0, 1].map(() => openStream(nginx.url, survivorSession, 1200)))),
  ];
  await Promise.all(streams.map((s) => s.firstChunk));
  const results = [];
  let loading = true;
  const worker = async () => {
    while (loading) results.push(await chat(nginx.url, { maxTokens: 16 }));
  };
  const workers = [worker(), worker(), worker()];
  const pinned = [0, 1].map(() => chat(nginx.url, { session: victimSession, maxTokens: 400 }));
  // Kill once the victim is busy with its 2 streams and the 2 long requests.
  await until('victim busy', async () => (await metric(victim.addr, 'qvl_active_requests')) >= 4, 20000);
  const before = results.length;
  const killedAt = Date.now();
  victim.proc.kill('SIGKILL');
  await victim.exited;

  await Promise.all(streams.map((s) => s.done));
  for (const s of streams.slice(0, 2)) {
    assert.equal(s.replica, victim.addr);
    assert.notEqual(s.ended, 'done', 'a stream on the killed replica cannot finish');
    assert.ok(s.endedAt - killedAt < 10000, `cut stream ended ${s.endedAt - killedAt} ms after the kill`);
  }
  for (const s of streams.slice(2)) {
    assert.equal(s.replica, survivor.addr);
    assert.equal(s.ended, 'done');
    assert.match(s.text, /"finish_reason":"length"/);
    assert.ok(s.chunks >= 10, `unbuffered: ${s.chunks} reads`);
  }
  const cutMs = streams.slice(0, 2).map((s) => s.endedAt - killedAt);
  const longOnes = await Promise.all(pinned);
  for (const r of longOnes) assert.ok(r.ok, `pinned long request: ${JSON.stringify(r)}`);
  assert.ok(longOnes.every((r) => r.replica === survivor.addr));
  await until('requests after the kill', async () => results.length >= before + 20);
  const afterKill = results.filter((r) => r.started > killedAt + 50);
  assert.ok(afterKill.every((r) => r.replica === survivor.addr), 'the survivor serves the rest');

  // Restart the victim on its port; nginx tries it again after fail_timeout.
  const restartedAt = Date.now();
  const restarted = await startReplica(victim.port);
  const readyAt = Date.now();
  const back = await until('rejoin', async () => {
    const r = results.slice(-6).find((x) => x.replica === restarted.addr && x.started >= readyAt);
    return r ? Date.now() : null;
  }, 30000);
  const sessionBack = await until('session rejoin', async () =>
    ((await chat(nginx.url, { session: victimSession, maxTokens: 2 })).replica === restarted.addr ? Date.now() : null), 30000);
  loading = false;
  await Promise.all(workers);

  const failed = results.filter((r) => !r.ok);
  const retried = [...results, ...longOnes].filter((r) => r.tried?.includes(','));
  console.log(`non-streamed: ${results.length + longOnes.length} requests, ${failed.length} failed, ` +
    `${retried.length} moved to the survivor by nginx (incl. ${longOnes.filter((r) => r.tried?.includes(',')).length} in flight on the killed replica)`);
  console.log(`streams: 2 on the killed replica cut after ${cutMs.join(', ')} ms (${streams[0].ended}, ${streams[1].ended}); ` +
    '2 on the survivor finished with [DONE]');
  console.log(`restart: replica ready ${readyAt - restartedAt} ms after start; least_conn traffic back ` +
    `${back - readyAt} ms later, its sessions back ${sessionBack - readyAt} ms later`);
  assert.deepEqual(failed, []);
  replicas[0] = restarted;
  drainSession = victimSession;
});

test('a draining replica (SIGTERM: 503, then closed) hands new requests to the other', { timeout: 60000 }, async () => {
  const [draining] = replicas;
  const stream = await openStream(nginx.url, drainSession, 300);
  assert.equal(stream.replica, draining.addr);
  const results = [];
  draining.proc.kill('SIGTERM');
  for (let i = 0; i < 10; i++) results.push(await chat(nginx.url, { maxTokens: 4 }));
  assert.deepEqual(results.filter((r) => !r.ok), []);
  assert.equal((await draining.exited).code, 0);
  await stream.done;
  assert.equal(stream.ended, 'done', 'an in-flight stream finishes during the grace period');
  console.log(`drain: 10 requests during a SIGTERM drain, 0 failed, ${results.filter((r) => r.tried?.includes(',')).length} moved by nginx`);
});

test('a full replica (429) hands requests to the other', { timeout: 60000 }, async () => {
  // One slot, no queue: while it streams, the replica answers 429 to anything else.
  const full = await startReplica(replicas[0].port, ['--parallel', '1', '--queue', '0']);
  replicas[0] = full;
  await until('session back on the restarted replica', async () =>
    (await chat(nginx.url, { session: drainSession, maxTokens: 2 })).replica === full.addr);
  const stream = await openStream(nginx.url, drainSession, 1500);
  assert.equal(stream.replica, full.addr);
  const results = [];
  for (let i = 0; i < 5; i++) results.push(await chat(nginx.url, { session: drainSession, maxTokens: 4 }));
  assert.equal(stream.ended, null, 'the stream still holds the only slot');
  await stream.done;
  const refused = await (await fetch(`http://${full.addr}/metrics`)).text();
  const count429 = refused.split('\n')
    .filter((l) => l.startsWith('qvl_requests_total{') && l.includes('status="429"'))
    .reduce((sum, l) => sum + Number(l.split(' ').pop()), 0);
  assert.deepEqual(results.filter((r) => !r.ok), []);
  assert.ok(count429 >= 1, 'the full replica refused with 429');
  assert.ok(results.every((r) => r.replica === replicas[1].addr));
  console.log(`full replica: ${results.length} requests, 0 failed, ${count429} answered 429 and moved by nginx`);
});
