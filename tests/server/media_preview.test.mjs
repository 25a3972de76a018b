// POST /v1/media/preview: what the server makes of a video or a document part, equal to what
// /v1/chat/completions then counts (video tokens in usage, page tokens in timings), sampled
// frames with the prompt's timestamps, page thumbnails and text layers, and the chat path's
// errors and key.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startServer, postJson } from './helpers.mjs';
import { makePdf, pdfText, twoPagePdf } from './make_pdf.mjs';

const KEY = 'preview-key';
const auth = { authorization: `Bearer ${KEY}` };
let server;
let tmp;
let clip;  // data URI of a 2 s 128x96 MP4 at 10 fps (20 frames)

before(async () => {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'qvl-preview-'));
  const file = path.join(tmp, 'clip.mp4');
  execFileSync('ffmpeg', ['-v', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc=size=128x96:rate=10',
    '-t', '2', '-c:v', 'libx264', '-pix_fmt', 'yuv420p', '-g', '5', file]);
  clip = `data:video/mp4;base64,${readFileSync(file).toString('base64')}`;
  server = await startServer(['--api-key', KEY, '--document-page-tokens', '64']);
});

after(async () => {
  rmSync(tmp, { recursive: true, force: true });
  const { code } = await server.stop();
  assert.equal(code, 0);
});

const preview = (part, headers = auth) => postJson(server, '/v1/media/preview', { part }, headers);
const chat = (part) => postJson(server, '/v1/chat/completions', {
  model: 'tiny', max_tokens: 2, temperature: 0,
  messages: [{ role: 'user', content: [part, { type: 'text', text: 'What is it?' }] }],
}, auth);
const jpeg = (uri) => Buffer.from(uri.slice('data:image/jpeg;base64,'.length), 'base64');

test('a video: sampled frames, their prompt timestamps, thumbnails and the tokens chat counts', async () => {
  const part = { type: 'video_url', video_url: { url: clip } };
  const { status, json } = await preview(part);
  assert.equal(status, 200, JSON.stringify(json));
  // 20 frames at 10 fps sampled at 2 fps: 4 frames (0, 6, 13, 19), 2 pairs of 6 x 8 patches.
  assert.equal(json.type, 'video');
  assert.deepEqual(json.frames.map((f) => f.index), [0, 6, 13, 19]);
  assert.deepEqual(json.frames.map((f) => f.pair), [0, 0, 1, 1]);
  assert.deepEqual(json.frames.map((f) => f.timestamp_text),
    ['<0.3 seconds>', '<0.3 seconds>', '<1.6 seconds>', '<1.6 seconds>']);
  assert.equal(json.sampled_frames, 4);
  assert.equal(json.pairs, 2);
  assert.deepEqual(json.grid, { t: 2, h: 6, w: 8 });
  assert.equal(json.video_tokens, 24);
  assert.equal(json.duration, 2);
  assert.equal(json.source.frame_count, 20);
  assert.equal(json.source.codec, 'h264');
  for (const frame of json.frames) {
    const bytes = jpeg(frame.thumbnail);
    assert.deepEqual([...bytes.subarray(0, 3)], [0xff, 0xd8, 0xff], 'thumbnails are JPEG');
    assert.ok(bytes.length < 8000, `a thumbnail is small (${bytes.length} bytes)`);
  }
  const answer = await chat(part);
  assert.equal(answer.status, 200);
  assert.equal(answer.json.usage.prompt_tokens_details.video_tokens, json.video_tokens);
});

test('per-request video settings change the preview as they change the request', async () => {
  for (const settings of [{ fps: 4 }, { max_frames: 2 }, { max_pixels: 4 * 64 * 64 }]) {
    const part = { type: 'video_url', video_url: { url: clip, ...settings } };
    const { json } = await preview(part);
    const answer = await chat(part);
    assert.equal(json.video_tokens, answer.json.usage.prompt_tokens_details.video_tokens,
      JSON.stringify(settings));
    assert.equal(json.sampled_frames, settings.fps ? 8 : settings.max_frames ? 2 : 4);
  }
});

test('a frame list has no container: frames and tokens, no duration', async () => {
  const frame = `data:image/png;base64,${readFileSync(path.join(process.argv[3], 'images', 'a_ii_shapes_200x120.png')).toString('base64')}`;
  const part = { type: 'video', video: [frame, frame, frame, frame], fps: 2 };
  const { status, json } = await preview(part);
  assert.equal(status, 200, JSON.stringify(json));
  assert.equal(json.sampled_frames, 4);
  assert.equal(json.source, null);
  assert.equal(json.duration, null);
  const answer = await chat(part);
  assert.equal(answer.json.usage.prompt_tokens_details.video_tokens, json.video_tokens);
});

test('a PDF: page count, chosen pages with size, tokens, thumbnail and text layer', async () => {
  const part = { type: 'file', file: { file_data: `data:application/pdf;base64,${twoPagePdf().toString('base64')}`,
    filename: 'doc.pdf', text: true } };
  const { status, json } = await preview(part);
  assert.equal(status, 200, JSON.stringify(json));
  assert.equal(json.type, 'document');
  assert.equal(json.page_count, 2);
  assert.deepEqual(json.pages.map((p) => p.number), [1, 2]);
  for (const page of json.pages) {
    assert.equal(page.tokens, (page.width / 32) * (page.height / 32));
    assert.ok(page.tokens <= 64);
    assert.equal(jpeg(page.thumbnail)[0], 0xff);
  }
  assert.match(json.pages[0].text, /Invoice 2026-0042/);
  assert.match(json.pages[1].text, /Parcel label 7/);
  assert.equal(json.image_tokens, json.pages[0].tokens + json.pages[1].tokens);
  const answer = await chat(part);
  assert.equal(answer.status, 200);
  assert.equal(answer.json.timings.image_tokens, json.image_tokens);

  const second = { type: 'file', file: { ...part.file, pages: '2', text: false, detail: 'low' } };
  const one = await preview(second);
  assert.deepEqual(one.json.pages.map((p) => p.number), [2]);
  assert.equal(one.json.pages[0].text, undefined);
  assert.equal((await chat(second)).json.timings.image_tokens, one.json.image_tokens);
});

// An uncompressed RGB TIFF with one page per {width, height, rgb} (little-endian, one strip).
function makeTiff(pages) {
  const entries = 10;
  const ifdSize = 2 + entries * 12 + 4;
  const sizes = pages.map((p) => ifdSize + 6 + p.width * p.height * 3);
  const out = Buffer.alloc(8 + sizes.reduce((a, b) => a + b, 0));
  out.write('II*\0', 0, 'latin1');
  out.writeUInt32LE(8, 4);
  let at = 8;
  pages.forEach((page, i) => {
    const bits = at + ifdSize;
    const pixels = bits + 6;
    const tags = [[256, 3, 1, page.width], [257, 3, 1, page.height], [258, 3, 3, bits], [259, 3, 1, 1], [262, 3, 1, 2],
      [273, 4, 1, pixels], [277, 3, 1, 3], [278, 3, 1, page.height], [279, 4, 1, page.width * page.height * 3], [284, 3, 1, 1]];
    out.writeUInt16LE(entries, at);
    tags.forEach(([tag, type, count, value], k) => {
      const e = at + 2 + k * 12;
      out.writeUInt16LE(tag, e);
      out.writeUInt16LE(type, e + 2);
      out.writeUInt32LE(count, e + 4);
      if (type === 3 && count === 1) out.writeUInt16LE(value, e + 8); else out.writeUInt32LE(value, e + 8);
    });
    out.writeUInt32LE(i + 1 < pages.length ? at + sizes[i] : 0, at + 2 + entries * 12);
    for (let c = 0; c < 3; c++) out.writeUInt16LE(8, bits + 2 * c);
    for (let p = 0; p < page.width * page.height; p++) out.set(page.rgb, pixels + 3 * p);
    at += sizes[i];
  });
  return out;
}

test('a multi-page TIFF scan: its pages as the image path resizes them, tokens as chat counts', async () => {
  const tiff = makeTiff([{ width: 300, height: 400, rgb: [200, 30, 30] }, { width: 640, height: 200, rgb: [30, 30, 200] }]);
  const part = { type: 'file', file: { file_data: `data:image/tiff;base64,${tiff.toString('base64')}`, filename: 'scan.tif' } };
  const { status, json } = await preview(part);
  assert.equal(status, 200, JSON.stringify(json));
  assert.equal(json.page_count, 2);
  assert.deepEqual(json.pages.map((p) => p.number), [1, 2]);
  assert.ok(json.pages[0].height > json.pages[0].width && json.pages[1].width > json.pages[1].height, 'each page keeps its shape');
  assert.equal((await chat(part)).json.timings.image_tokens, json.image_tokens);
});

test('pages share the request budget as in chat: many pages, fewer tokens each', async () => {
  const pages = Array.from({ length: 6 }, (_, i) => ({ content: pdfText(72, 700, 24, `Page ${i + 1}`) }));
  const part = { type: 'file', file: { file_data: `data:application/pdf;base64,${makePdf(pages).toString('base64')}`,
    detail: 'high' } };
  const { json } = await preview(part);
  assert.equal(json.pages.length, 6);
  assert.ok(json.pages.every((p) => p.tokens <= Math.floor(4096 / 6)));
  assert.equal((await chat(part)).json.timings.image_tokens, json.image_tokens);
});

test('/props states the document limits the page checks before uploading', async () => {
  const props = await (await fetch(`${server.url}/props`, { headers: auth })).json();
  assert.deepEqual(props.document, {
    max_document_bytes: 64 * 1024 * 1024, max_pages: 64, page_tokens: 64, low_detail_page_tokens: 256,
    high_detail_page_tokens: 2048, max_documents_per_request: 4,
  });
});

test('errors are the chat path\'s, with "part" as the parameter; the key is required', async () => {
  const pdf = `data:application/pdf;base64,${twoPagePdf().toString('base64')}`;
  const past = await preview({ type: 'file', file: { file_data: pdf, pages: '3' } });
  assert.equal(past.status, 400);
  assert.match(past.json.error.param, /^part/);
  const notVideo = await preview({ type: 'video_url', video_url: { url: 'data:video/mp4;base64,AAAA' } });
  assert.equal(notVideo.status, 400);
  assert.equal(notVideo.json.error.param, 'part');
  const tooFast = await preview({ type: 'video_url', video_url: { url: clip, fps: 100 } });
  assert.equal(tooFast.status, 400);
  assert.match(tooFast.json.error.message, /fps/);
  const text = await preview({ type: 'text', text: 'hi' });
  assert.equal(text.status, 400);
  assert.equal(text.json.error.param, 'part.type');
  const missing = await postJson(server, '/v1/media/preview', {}, auth);
  assert.equal(missing.status, 400);
  assert.equal(missing.json.error.param, 'part');
  const noKey = await preview({ type: 'video_url', video_url: { url: clip } }, {});
  assert.equal(noKey.status, 401);
});

test('a preview holds a generation slot as its chat request would: none free and no queue is 429', async () => {
  const busy = await startServer(['--parallel', '1', '--queue', '0', '--ctx-size', '100000']);
  const controller = new AbortController();
  try {
    // Random sampling over the tiny model's vocabulary: it generates until max_tokens.
    const res = await fetch(`${busy.url}/v1/chat/completions`, {
      method: 'POST', signal: controller.signal, headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'tiny', max_tokens: 3000, temperature: 1, stream: true,
        messages: [{ role: 'user', content: 'Tell me a long story.' }] }),
    });
    const reader = res.body.getReader();
    await reader.read();  // generating: the only slot is taken
    const refused = await postJson(busy, '/v1/media/preview', { part: { type: 'video_url', video_url: { url: clip } } });
    assert.equal(refused.status, 429);
    assert.equal(refused.headers.get('retry-after'), '1');
    controller.abort();
    let status = 429;
    const end = Date.now() + 60000;
    while (status === 429 && Date.now() < end) {
      await new Promise((r) => setTimeout(r, 50));
      status = (await postJson(busy, '/v1/media/preview', { part: { type: 'video_url', video_url: { url: clip } } })).status;
    }
    assert.equal(status, 200, 'the slot comes back once the answer is cancelled');
  } finally {
    controller.abort();
    await busy.stop();
  }
});
