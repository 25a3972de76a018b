// The page's media logic in node (no browser): what is a video or a document, the byte limits
// from /props, the content parts sent, page ranges, times named in answers and their frames,
// and what a conversation with a video or document sends.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chosenPages, findTimes, mediaByteLimit, mediaKind, mediaPart, nearestFrame, pagesText, parsePages } from '../../web/src/media.js';
import { buildRequest } from '../../web/src/chat.js';
import { putImage } from '../../web/src/store.js';
import { pagesJson, pagesMarkdown, pagesText as answerText } from '../../web/src/page_ocr.js';

const bytes = (text, size = 1024) => { const b = new Uint8Array(size); b.set([...text].map((c) => c.charCodeAt(0))); return b; };

test('kinds by content first, then by type', () => {
  assert.equal(mediaKind({ type: '' }, bytes('%PDF-1.7')), 'document');
  assert.equal(mediaKind({ type: '' }, bytes('II*\0')), 'document');
  assert.equal(mediaKind({ type: '' }, bytes('\0\0\0\x20ftypisom')), 'video');
  assert.equal(mediaKind({ type: 'image/heic' }, bytes('\0\0\0\x20ftypheic')), null, 'a HEIC photo is an image');
  assert.equal(mediaKind({ type: '' }, bytes('\x1a\x45\xdf\xa3')), 'video');
  assert.equal(mediaKind({ type: 'video/quicktime' }, bytes('junk')), 'video');
  assert.equal(mediaKind({ type: 'image/png' }, bytes('\x89PNG')), null);
});

test('byte limits: the server\'s own, and what fits the body once base64 grows it', () => {
  const props = { max_body_bytes: 32 << 20, video: { max_video_bytes: 64 << 20 }, document: { max_document_bytes: 1 << 20 } };
  assert.equal(mediaByteLimit('video', props), Math.floor(((32 << 20) - 65536) * 3 / 4));
  assert.equal(mediaByteLimit('document', props), 1 << 20);
});

test('content parts carry the per-request settings given, nothing else', () => {
  const video = { kind: 'video', dataUrl: 'data:video/mp4;base64,AA', settings: { fps: '4', max_frames: '', max_pixels: '' } };
  assert.deepEqual(mediaPart(video), { type: 'video_url', video_url: { url: 'data:video/mp4;base64,AA', fps: 4 } });
  const doc = { kind: 'document', name: 'a.pdf', dataUrl: 'data:application/pdf;base64,AA', settings: { pages: '1-3', detail: 'low', text: true } };
  assert.deepEqual(mediaPart(doc), { type: 'file', file: { file_data: doc.dataUrl, filename: 'a.pdf', pages: '1-3', detail: 'low', text: true } });
  assert.equal(mediaPart(doc, 2).file.pages, '2', 'one page of a page-by-page reading');
});

test('page ranges both ways; the chosen pages of a record', () => {
  assert.deepEqual(parsePages('1-3, 5', 6), [1, 2, 3, 5]);
  assert.equal(parsePages('4-2', 6), null);
  assert.equal(parsePages('7', 6), null);
  assert.equal(parsePages('a', 6), null);
  assert.equal(pagesText([1, 2, 3, 5, 7, 8]), '1-3,5,7-8');
  const record = { settings: { pages: '' }, preview: { page_count: 3 }, allPages: [{ number: 1 }, { number: 2 }, { number: 3 }] };
  assert.deepEqual(chosenPages(record), [1, 2, 3]);
  record.settings.pages = '2-3';
  assert.deepEqual(chosenPages(record), [2, 3]);
});

test('times named in answers, and the nearest sampled frame', () => {
  assert.deepEqual(findTimes('at <4.0 seconds>, then 3.5 seconds, 2 s, 0:04 and 1:02:03; 5 steps').map((t) => t.seconds), [4, 3.5, 2, 4, 3723]);
  assert.deepEqual(findTimes('1280 tokens, v2 slide'), []);
  const preview = { frames: [{ index: 0, timestamp: 0.25 }, { index: 6, timestamp: 0.25 }, { index: 13, timestamp: 1.6 }] };
  assert.equal(nearestFrame(preview, 1.2).index, 13);
  assert.equal(nearestFrame(preview, 0).index, 0);
});

test('a video goes with its own question, again in follow-ups; a stored one without bytes does not', async () => {
  await putImage({ id: 'mv', kind: 'video', name: 'v.mp4', dataUrl: 'data:video/mp4;base64,AA', settings: {}, preview: { frames: [] } });
  const conversation = { messages: [{ role: 'user', text: 'q1', preset: 'ask', images: ['mv'] }, { role: 'assistant', text: 'r1', state: 'done' },
    { role: 'user', text: 'q2', preset: 'ask', images: [] }] };
  const body = buildRequest(conversation, 2, { history: 5 }, { model: 'tiny' });
  assert.deepEqual(body.messages[0].content, [{ type: 'video_url', video_url: { url: 'data:video/mp4;base64,AA' } }, { type: 'text', text: 'q1' }]);
  assert.equal(body.messages[2].content, 'q2');
  await putImage({ id: 'mv', kind: 'video', name: 'v.mp4', dataUrl: null, settings: {}, preview: { frames: [] } });
  assert.equal(buildRequest(conversation, 2, { history: 5 }, { model: 'tiny' }).messages[0].content, 'q1');
});

test('a page-by-page reading as text, Markdown and JSON', () => {
  const answer = { pages: [{ page: 2, text: 'two' }, { page: 3, text: 'three' }] };
  assert.equal(answerText(answer), '--- Page 2 ---\ntwo\n\n--- Page 3 ---\nthree');
  assert.equal(pagesMarkdown(answer, 'a.pdf'), '# a.pdf\n\n## Page 2\n\ntwo\n\n## Page 3\n\nthree\n');
  assert.deepEqual(JSON.parse(pagesJson(answer)), [{ page: 2, text: 'two' }, { page: 3, text: 'three' }]);
});
