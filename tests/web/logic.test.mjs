// The page's pure logic, in node (no browser): grounding answer parsing and the request built
// from a conversation (history length, images sent once, per-request image limit, presets).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseBoxes } from '../../web/src/grounding.js';
import { buildRequest } from '../../web/src/chat.js';
import { OCR_PROMPT } from '../../web/src/presets.js';
import { putImage } from '../../web/src/store.js';

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
