// The page's pure logic, in node (no browser): grounding answer parsing and the request built
// from a conversation (history length, images sent once, per-request image limit, presets).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseBoxes } from '../../web/src/grounding.js';
import { buildRequest } from '../../web/src/chat.js';
import { OCR_PROMPT } from '../../web/src/presets.js';
import { putImage } from '../../web/src/store.js';
import { modelLine } from '../../web/src/model_line.js';

test('grounding boxes: fenced JSON, bare JSON, one object, truncated answers, junk', () => {
  assert.deepEqual(parseBoxes('Sure!\n```json\n[{"bbox_2d": [10, 20, 300, 400], "label": "cat"}]\n```'),
    [{ x1: 10, y1: 20, x2: 300, y2: 400, label: 'cat' }]);
  assert.deepEqual(parseBoxes('{"bbox_2d": [500, 20, 300, 1400], "label": "b"}'),
    [{ x1: 300, y1: 20, x2: 500, y2: 1000, label: 'b' }], 'corners are ordered and clamped to 0..1000');
  assert.deepEqual(parseBoxes('[{"bbox_2d": [1, 2, 30, 40], "label": "a"}, {"bbox_2d": [5, 6, 7'),
    [{ x1: 1, y1: 2, x2: 30, y2: 40, label: 'a' }], 'a stopped answer keeps its complete boxes');
  assert.equal(parseBoxes('[{"bbox_2d": [1, 2, 30, 40], "label": "a"}, {"bbox_2d": [50, 60, 70, 80]}]').length, 2);
  assert.deepEqual(parseBoxes('no boxes [1, 2] {"a": 1}'), []);
  assert.deepEqual(parseBoxes('[{"bbox_2d": [5, 5, 5, 9]}, {"bbox_2d": ["x", 1, 2, 3]}]'), [], 'empty or bad boxes are dropped');
});

const props = { model: 'tiny', image: { max_images_per_request: 2 } };
const user = (text, images = [], preset = 'ask') => ({ role: 'user', text, preset, images });
const answer = (text) => ({ role: 'assistant', text, state: 'done' });

test('history: the last N turns, each image once, oldest images dropped past the limit', async () => {
  for (const id of ['a', 'b', 'c']) await putImage({ id, dataUrl: `data:image/png;base64,${id}`, width: 1, height: 1, name: id });
  const conversation = { messages: [user('q1', ['a']), answer('r1'), user('q2', ['b']), answer('r2'), user('q3', ['a', 'c'])] };
  const full = buildRequest(conversation, 4, { history: 5, temperature: 0.5, system: 'Be brief.' }, props);
  assert.deepEqual(full.messages.map((m) => m.role), ['system', 'user', 'assistant', 'user', 'assistant', 'user']);
  assert.equal(full.temperature, 0.5);
  assert.equal(full.model, 'tiny');
  const urls = full.messages.flatMap((m) => (Array.isArray(m.content) ? m.content : []))
    .filter((p) => p.type === 'image_url').map((p) => p.image_url.url.slice(-1));
  assert.deepEqual(urls, ['a', 'c'], "image a is sent where it first appears; b, the oldest other, exceeds the limit");
  assert.equal(full.messages[3].content, 'q2');

  const one = buildRequest(conversation, 4, { history: 1 }, props);
  assert.deepEqual(one.messages.map((m) => m.content), ['q2', 'r2', one.messages[2].content]);
  assert.deepEqual(one.messages[2].content.map((p) => p.type), ['image_url', 'image_url', 'text']);
  assert.equal(buildRequest(conversation, 4, { history: 0 }, props).messages.length, 1);
  assert.equal(buildRequest(conversation, 4, {}, props).temperature, undefined, 'unset = server default');
});

test('presets: OCR sends the verbatim prompt greedily, Find objects asks for 0..1000 boxes', () => {
  const ocr = buildRequest({ messages: [user('', ['a'], 'ocr')] }, 0, { temperature: 0.9, detail: 'high' }, props);
  assert.equal(ocr.temperature, 0);
  assert.equal(ocr.messages[0].content[1].text, OCR_PROMPT);
  assert.equal(ocr.messages[0].content[0].image_url.detail, 'high');
  const ground = buildRequest({ messages: [user('red cars', ['a'], 'ground')] }, 0, {}, props);
  assert.match(ground.messages[0].content[1].text, /red cars.*"bbox_2d".*0 to 1000/s);
});

test('image token estimate: smart resize and the shared request budget, as the server computes', async () => {
  const { estimateImageTokens, smartResize } = await import('../../web/src/tokens.js');
  const image = { pixels_per_token: 1024, min_tokens: 64, max_tokens: 1024, low_detail_max_tokens: 256, high_detail_max_tokens: 1280, max_total_tokens: 4096 };
  assert.deepEqual(smartResize(480, 640, 32, 64 * 1024, 1024 * 1024), [480, 640]);
  assert.equal(smartResize(1, 3000, 32, 0, 1 << 20), null, 'aspect ratio above 200 is refused');
  assert.deepEqual(estimateImageTokens([{ width: 640, height: 480 }], image), [300]);
  assert.deepEqual(estimateImageTokens([{ width: 640, height: 480, detail: 'low' }], image), [234]);
  assert.deepEqual(estimateImageTokens([{ width: 10, height: 10 }], image), [64], 'small images grow to the minimum');
  // Five 2000x2000 images share 4096 tokens: 819 each at most.
  const five = estimateImageTokens(Array(5).fill({ width: 2000, height: 2000, detail: 'high' }), image);
  assert.ok(five.every((n) => n <= 819 && n > 700), String(five));
});

test('box label colours have 4.5:1 contrast with their white text', async () => {
  const { PALETTE } = await import('../../web/src/grounding.js');
  const lum = (hex) => [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16) / 255)
    .map((c) => (c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4))
    .reduce((sum, c, i) => sum + c * [0.2126, 0.7152, 0.0722][i], 0);
  for (const colour of PALETTE) assert.ok(1.05 / (lum(colour) + 0.05) >= 4.5, colour);
});

test('a refused (4xx) turn is never sent again; failed turns do not count as history', () => {
  const conversation = { messages: [user('bad', ['a']), user('good', ['b'])] };
  conversation.messages[0].failed = { status: 400, message: 'no' };
  const body = buildRequest(conversation, 1, {}, props);
  assert.equal(body.messages.length, 1);
  assert.deepEqual(body.messages[0].content.map((p) => p.type), ['image_url', 'text']);
  assert.match(body.messages[0].content[0].image_url.url, /b$/);
});

test('while nothing is written: queued, then reading the image with the elapsed time', async () => {
  const { waitingText } = await import('../../web/src/view.js');
  assert.equal(waitingText({ phase: 'queued', phaseStarted: Date.now() }), 'Waiting for a free slot…');
  assert.equal(waitingText({ phase: 'reading', hasImages: true, phaseStarted: Date.now() - 4200 }), 'Reading image… 4 s');
  assert.equal(waitingText({ phase: 'reading', hasImages: false, phaseStarted: Date.now() - 1500 }), 'Reading the question… 1 s');
});

test('formats: what the server reads passes; AVIF, HEIC, animated WebP and RLE BMP are re-encoded', async () => {
  const { serverFormat } = await import('../../web/src/images.js');
  const bytes = (...parts) => {
    const out = new Uint8Array(64);
    let at = 0;
    for (const p of parts) for (const b of typeof p === 'string' ? [...p].map((c) => c.charCodeAt(0)) : p) out[at++] = b;
    return out;
  };
  assert.equal(serverFormat(bytes([0xff, 0xd8, 0xff, 0xe0])), 'JPEG');
  assert.equal(serverFormat(bytes([0x89], 'PNG\r\n\x1a\n')), 'PNG');
  assert.equal(serverFormat(bytes('GIF89a')), 'GIF');
  assert.equal(serverFormat(bytes('RIFF', [0, 0, 0, 0], 'WEBPVP8 ')), 'WebP');
  const animated = bytes('RIFF', [0, 0, 0, 0], 'WEBPVP8X', [0, 0, 0, 0, 0x02]);
  assert.equal(serverFormat(animated), null);
  const bmp = bytes('BM');
  assert.equal(serverFormat(bmp), 'BMP');
  bmp[30] = 1;
  assert.equal(serverFormat(bmp), null, 'RLE8 BMP');
  assert.equal(serverFormat(bytes([0, 0, 0, 0x1c], 'ftypavif')), null);
  assert.equal(serverFormat(bytes([0, 0, 0, 0x18], 'ftypheic')), null);
  assert.equal(serverFormat(bytes('<svg xmlns="http://www.w3.org/2000/svg">')), null);
});

test('the model line: size, file format and type, and the type it runs as when that differs', () => {
  assert.equal(modelLine({ size: '2B', format: 'safetensors', file_type: 'BF16', quant: 'q8' }), ' · 2B · safetensors BF16 → q8');
  assert.equal(modelLine({ size: '8B', format: 'gguf', file_type: 'Q4_K_M', quant: 'q4' }), ' · 8B · GGUF Q4_K_M → q4');
  assert.equal(modelLine({ size: '2B', format: 'gguf', file_type: 'Q8_0', quant: 'q8' }), ' · 2B · GGUF Q8_0 → q8');
  assert.equal(modelLine({ size: '4B', format: 'qvl', file_type: 'q4', quant: 'q4' }), ' · 4B · pre-packed q4');
  assert.equal(modelLine({ size: '2B', format: 'safetensors', file_type: 'BF16', quant: 'bf16' }), ' · 2B · safetensors BF16');
  assert.equal(modelLine({}), '', 'an older server without these fields');
});
