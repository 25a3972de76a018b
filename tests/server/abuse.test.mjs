// Malformed and abusive requests: each gets the right 4xx with an OpenAI error object, and the
// server keeps answering a valid request after every one of them.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import zlib from 'node:zlib';
import { startServer, postJson, chatBody, imageDataUri, rawRequest, statusOf } from './helpers.mjs';

let server;
const CONTEXT = 512;
const MAX_BODY_MB = 1;

before(async () => {
  server = await startServer(['--ctx-size', String(CONTEXT), '--max-body-mb', String(MAX_BODY_MB),
    '--max-images', '3', '--read-timeout', '1', '--max-image-pixels', '4000000']);
});

after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0);
});

function png(width, height, idat = Buffer.from([0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01])) {
  const chunk = (type, data) => {
    const length = Buffer.alloc(4); length.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type), data]);
    const crc = Buffer.alloc(4); crc.writeUInt32BE(zlib.crc32(body) >>> 0);
    return Buffer.concat([length, body, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0); ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; ihdr[9] = 2;  // 8-bit RGB
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr), chunk('IDAT', idat), chunk('IEND', Buffer.alloc(0))]);
}
const uri = (bytes, mime = 'image/png') => `data:${mime};base64,${Buffer.from(bytes).toString('base64')}`;
const withImage = (url, extra = {}) => chatBody({
  messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url, ...extra } }, { type: 'text', text: 'x' }] }],
});
const user = [{ role: 'user', content: 'x' }];

// [name, body (object or raw string), expected status, expected param (undefined = any)]
const cases = [
  ['empty body', '', 400],
  ['not JSON', '{"model": "m", "messages": [', 400],
  ['JSON array', '[1,2,3]', 400],
  ['JSON string', '"hello"', 400],
  ['deep nesting', '['.repeat(100000) + ']'.repeat(100000), 400],
  ['invalid UTF-8 in JSON', Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]), 400],
  ['missing model', { messages: user }, 400, 'model'],
  ['model is a number', { model: 1, messages: user }, 400, 'model'],
  ['missing messages', { model: 'm' }, 400, 'messages'],
  ['messages is a string', { model: 'm', messages: 'hi' }, 400, 'messages'],
  ['empty messages', { model: 'm', messages: [] }, 400, 'messages'],
  ['message is null', { model: 'm', messages: [null] }, 400, 'messages[0]'],
  ['missing role', { model: 'm', messages: [{ content: 'x' }] }, 400, 'messages[0].role'],
  ['unknown role', { model: 'm', messages: [{ role: 'hacker', content: 'x' }] }, 400, 'messages[0].role'],
  ['role is a number', { model: 'm', messages: [{ role: 3, content: 'x' }] }, 400, 'messages[0].role'],
  ['missing content', { model: 'm', messages: [{ role: 'user' }] }, 400, 'messages[0].content'],
  ['content is a number', { model: 'm', messages: [{ role: 'user', content: 42 }] }, 400, 'messages[0].content'],
  ['empty parts', { model: 'm', messages: [{ role: 'user', content: [] }] }, 400, 'messages[0].content'],
  ['unknown part type', { model: 'm', messages: [{ role: 'user', content: [{ type: 'input_audio' }] }] }, 400, 'messages[0].content[0].type'],
  ['text part without text', { model: 'm', messages: [{ role: 'user', content: [{ type: 'text' }] }] }, 400, 'messages[0].content[0].text'],
  ['image part without url', chatBody({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: {} }] }] }), 400, 'messages[0].content[0].image_url.url'],
  ['negative max_tokens', chatBody({ max_tokens: -5 }), 400, 'max_tokens'],
  ['zero max_tokens', chatBody({ max_tokens: 0 }), 400, 'max_tokens'],
  ['huge max_tokens', chatBody({ max_tokens: 1e300 }), 400, 'max_tokens'],
  ['max_tokens beyond 2^64', '{"model":"m","messages":[{"role":"user","content":"x"}],"max_tokens":123456789012345678901234567890}', 400, 'max_tokens'],
  ['max_tokens beyond context', chatBody({ max_completion_tokens: CONTEXT + 1 }), 400, 'max_completion_tokens'],
  ['max_tokens as string', chatBody({ max_tokens: '5' }), 400, 'max_tokens'],
  ['temperature too high', chatBody({ temperature: 99 }), 400, 'temperature'],
  ['temperature NaN-ish string', chatBody({ temperature: 'NaN' }), 400, 'temperature'],
  ['top_p zero', chatBody({ top_p: 0 }), 400, 'top_p'],
  ['top_k negative', chatBody({ top_k: -7 }), 400, 'top_k'],
  ['min_p above 1', chatBody({ min_p: 1.5 }), 400, 'min_p'],
  ['presence_penalty out of range', chatBody({ presence_penalty: 5 }), 400, 'presence_penalty'],
  ['repetition_penalty zero', chatBody({ repetition_penalty: 0 }), 400, 'repetition_penalty'],
  ['seed is an object', chatBody({ seed: {} }), 400, 'seed'],
  ['stop is a number', chatBody({ stop: 7 }), 400, 'stop'],
  ['too many stop sequences', chatBody({ stop: Array(50).fill('x') }), 400, 'stop'],
  ['n = 2', chatBody({ n: 2 }), 400, 'n'],
  ['stream is a string', chatBody({ stream: 'true' }), 400, 'stream'],
  ['bad base64', withImage('data:image/png;base64,!!!notbase64!!!'), 400, 'messages[0].content[0].image_url.url'],
  ['data URI without base64', withImage('data:image/png,rawbytes'), 400, 'messages[0].content[0].image_url.url'],
  ['data URI of text', withImage('data:text/html;base64,PGgxPg=='), 400, 'messages[0].content[0].image_url.url'],
  ['file URL', withImage('file:///etc/passwd'), 400, 'messages[0].content[0].image_url.url'],
  ['remote URL while disabled', withImage('http://169.254.169.254/latest/meta-data'), 400, 'messages[0].content[0].image_url.url'],
  ['bad detail', withImage(imageDataUri('a_v_square_97x61.png'), { detail: 'max' }), 400, 'messages[0].content[0].image_url.detail'],
  ['corrupt image', withImage(uri(Buffer.concat([png(64, 64).subarray(0, 40), Buffer.alloc(64, 0xab)]))), 400],
  ['not an image at all', withImage(uri(Buffer.from('GIF89a this is not really a gif'), 'image/gif')), 400],
  ['image bomb (100000 x 100000 PNG header)', withImage(uri(png(100000, 100000))), 400],
  ['too many images', chatBody({ messages: [{ role: 'user', content: Array(4).fill({ type: 'image_url', image_url: { url: imageDataUri('a_v_square_97x61.png') } }) }] }), 400],
  ['prompt longer than the context', chatBody({ messages: [{ role: 'user', content: 'hello '.repeat(2000) }] }), 400],
  ['oversized body', chatBody({ messages: [{ role: 'user', content: 'x'.repeat(MAX_BODY_MB * 1024 * 1024 + 10) }] }), 413],
];

test(`${cases.length} bad requests each get a 4xx and the server keeps serving`, async () => {
  assert.ok(cases.length >= 40);
  const report = [];
  for (const [name, body, status, param] of cases) {
    let res;
    try {
      res = await postJson(server, '/v1/chat/completions', body);
    } catch (e) {
      throw new Error(`${name}: ${e.message} (${e.cause?.code ?? e.cause})`);
    }
    report.push(`${res.status} ${name}: ${res.json?.error?.message?.slice(0, 100)}`);
    assert.equal(res.status, status, `${name}: ${res.text.slice(0, 300)}`);
    assert.ok(res.json && res.json.error, `${name}: no error object: ${res.text.slice(0, 200)}`);
    const { error } = res.json;
    for (const key of ['message', 'type', 'param', 'code']) assert.ok(key in error, `${name}: no ${key}`);
    assert.equal(typeof error.message, 'string');
    assert.ok(error.message.length > 10, `${name}: message too short`);
    if (param !== undefined) assert.equal(error.param, param, name);
    const ok = await postJson(server, '/v1/chat/completions', chatBody());
    assert.equal(ok.status, 200, `valid request after '${name}': ${ok.text.slice(0, 200)}`);
  }
  console.log(report.join('\n'));
});

test('HTTP-level abuse: slow loris, lying Content-Length, garbage, huge headers', async () => {
  const healthy = async (name) => {
    const ok = await postJson(server, '/v1/chat/completions', chatBody());
    assert.equal(ok.status, 200, `valid request after ${name}`);
  };
  const head = (length) => `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;

  // Half a body, then silence: the read timeout (1 s here) answers 408 and closes.
  const partial = await rawRequest(server, head(1000) + '{"model":"m","mess');
  assert.equal(partial.timedOut, false);
  assert.equal(statusOf(partial.data), 408, partial.data);
  assert.match(partial.data, /"error"/);
  await healthy('partial body');

  // Headers never finished: the connection is dropped without tying up the server.
  const stalledHeaders = await rawRequest(server, 'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n');
  assert.equal(stalledHeaders.timedOut, false);
  await healthy('stalled headers');

  // A Content-Length far beyond the limit is refused without reading it.
  const huge = await rawRequest(server, head(50 * 1024 * 1024 * 1024), { timeoutMs: 10000 });
  assert.equal(statusOf(huge.data), 413, huge.data);
  await healthy('huge Content-Length');

  // A chunked body that never ends.
  const chunked = `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n` +
    `100000\r\n${'a'.repeat(0x100000)}\r\n`.repeat(2);
  const chunkedRes = await rawRequest(server, chunked);
  assert.ok([400, 413].includes(statusOf(chunkedRes.data)), chunkedRes.data.slice(0, 200));
  await healthy('endless chunked body');

  const garbage = await rawRequest(server, '\x00\x01\x02 garbage \r\n\r\n', { keepOpen: false });
  assert.ok([0, 400].includes(statusOf(garbage.data)), garbage.data);
  await healthy('garbage request line');

  const bigHeader = await rawRequest(server, `GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(100000)}\r\n\r\n`, { keepOpen: false });
  assert.ok([0, 400, 431].includes(statusOf(bigHeader.data)), bigHeader.data.slice(0, 200));
  await healthy('huge header');

  const unknown = await postJson(server, '/v1/completions', chatBody());
  assert.equal(unknown.status, 404);
  assert.equal(unknown.json.error.code, 'unknown_url');
  const tokenizeBad = await postJson(server, '/tokenize', { content: 5 });
  assert.equal(tokenizeBad.status, 400);
  assert.equal(tokenizeBad.json.error.param, 'content');
  await healthy('unknown endpoint');
});
