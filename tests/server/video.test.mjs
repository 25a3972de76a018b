// Video through the OpenAI SDK: a video_url data URI (an MP4 made here by the ffmpeg program),
// a frame list, per-request settings and their caps, usage's video tokens, the feature cache
// (the same clip twice is encoded once) and clear 400s for bad videos.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { startServer, imageDataUri, postJson } from './helpers.mjs';

let server;
let client;
let tmp;
let clip;  // data URI of a 2 s 128x96 MP4 at 10 fps (20 frames)

function makeClip(name, args) {
  const file = path.join(tmp, name);
  execFileSync('ffmpeg', ['-v', 'error', '-y', ...args, file]);
  return readFileSync(file);
}

before(async () => {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'qvl-video-'));
  const mp4 = makeClip('clip.mp4', ['-f', 'lavfi', '-i', 'testsrc=size=128x96:rate=10', '-t', '2',
    '-c:v', 'libx264', '-pix_fmt', 'yuv420p', '-g', '5']);
  clip = `data:video/mp4;base64,${mp4.toString('base64')}`;
  server = await startServer();
  client = new OpenAI({ apiKey: 'unused', baseURL: `${server.url}/v1`, maxRetries: 0 });
});

after(async () => {
  rmSync(tmp, { recursive: true, force: true });
  const { code } = await server.stop();
  assert.equal(code, 0);
});

function ask(part, extra = {}) {
  return client.chat.completions.create({
    model: 'tiny', max_tokens: 3, temperature: 0, ...extra,
    messages: [{ role: 'user', content: [part, { type: 'text', text: 'What happens?' }] }],
  });
}

async function counter(name) {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const m = text.match(new RegExp(`^${name} (\\S+)$`, 'm'));
  return m ? Number(m[1]) : NaN;
}

test('video_url data URI: video tokens in usage, then the same clip from the feature cache', async () => {
  // 20 frames at 10 fps sampled at 2 fps: 4 frames, 2 pairs of 6 x 8 patches -> 2 x 12 tokens.
  const first = await ask({ type: 'video_url', video_url: { url: clip } });
  assert.equal(first.usage.prompt_tokens_details.video_tokens, 24);
  assert.equal(first.timings.video_tokens, 24);
  assert.equal(first.timings.image_tokens, 0);
  assert.equal(first.usage.completion_tokens, 3);
  assert.ok(await counter('qvl_video_tokens_total') >= 24);
  const hits = await counter('qvl_image_cache_hits_total');
  const again = await ask({ type: 'video_url', video_url: { url: clip } });
  assert.equal(await counter('qvl_image_cache_hits_total'), hits + 1);
  assert.equal(again.usage.prompt_tokens, first.usage.prompt_tokens);
  assert.equal(again.choices[0].message.content, first.choices[0].message.content);
});

test('/props states the video settings', async () => {
  const props = await (await fetch(`${server.url}/props`)).json();
  assert.deepEqual(props.video, {
    pixels_per_token: 2048, fps: 2, max_fps: 8, max_frames: 128, max_pixels: 8388608,
    max_videos_per_request: 2, max_video_bytes: 64 * 1024 * 1024,
  });
});

test('per-request max_frames and fps change the sampling', async () => {
  const two = await ask({ type: 'video_url', video_url: { url: clip, max_frames: 2 } });
  assert.equal(two.usage.prompt_tokens_details.video_tokens, 12);  // one pair
  const faster = await ask({ type: 'video_url', video_url: { url: clip, fps: 4 } });
  assert.equal(faster.usage.prompt_tokens_details.video_tokens, 48);  // 8 frames, 4 pairs
  const small = await ask({ type: 'video_url', video_url: { url: clip, max_pixels: 4 * 64 * 64 } });
  assert.ok(small.usage.prompt_tokens_details.video_tokens < 24);
});

test('a frame list with its rate', async () => {
  const frame = imageDataUri('a_ii_shapes_200x120.png');
  // Four 200x120 frames at 2 fps: all kept, 128x192 each -> 2 pairs of 24 tokens.
  const r = await ask({ type: 'video', video: [frame, frame, frame, frame], fps: 2 });
  assert.equal(r.usage.prompt_tokens_details.video_tokens, 48);
});

test('bad videos and settings are 400s naming the problem', async () => {
  const post = (part) => postJson(server, '/v1/chat/completions', {
    model: 'tiny', max_tokens: 1,
    messages: [{ role: 'user', content: [part, { type: 'text', text: 'Hi' }] }],
  });
  let r = await post({ type: 'video_url', video_url: { url: clip, fps: 1000 } });
  assert.equal(r.status, 400);
  assert.match(r.json.error.param, /video_url\.fps$/);
  r = await post({ type: 'video_url', video_url: { url: clip, max_frames: 100000 } });
  assert.equal(r.status, 400);
  assert.match(r.json.error.message, /max_frames/);
  r = await post({ type: 'video_url', video_url: { url: 'data:video/mp4;base64,AAAAIGZ0eXBpc29t' } });
  assert.equal(r.status, 400);
  assert.match(r.json.error.message, /video 1: /);
  r = await post({ type: 'video_url', video_url: { url: 'https://example.com/a.mp4' } });
  assert.equal(r.status, 400);
  assert.match(r.json.error.message, /remote URLs are disabled/);
  r = await post({ type: 'video', video: [imageDataUri('a_ii_shapes_200x120.png'),
    imageDataUri('a_v_square_97x61.png')], fps: 2 });
  assert.equal(r.status, 400);
  assert.match(r.json.error.message, /one size/);
  r = await post({ type: 'video', video: 'not a list' });
  assert.equal(r.status, 400);
  r = await post({ type: 'videos', videos: [] });
  assert.equal(r.status, 400);
  assert.match(r.json.error.message, /unsupported content part type 'videos'/);
});
