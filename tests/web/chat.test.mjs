// The page against a real `qvl serve` (tiny model, one generation slot, a queue of one): images
// by picker and by drag and drop, a streamed answer, stop, reload, the OCR preset, a request
// waiting in the queue, a real 429.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { MODEL_DIR, metricValue, startServer, waitForMetric } from '../server/helpers.mjs';
import { foreignRequests, launchBrowser, openPage, screenshotPath, sseBody } from './browser.mjs';

const IMAGES = path.join(MODEL_DIR, 'images');
const SCENE = path.join(IMAGES, 'a_iii_scene_640x480.jpg');
const SHAPES = path.join(IMAGES, 'a_ii_shapes_200x120.png');
let server;
let browser;
let page;
let log;
const chatBodies = [];

before(async () => {
  server = await startServer(['--parallel', '1', '--queue', '1', '--ctx-size', '100000']);
  browser = await launchBrowser();
  ({ page, log } = await openPage(browser, server.url));
  page.on('request', (request) => {
    if (request.url().endsWith('/v1/chat/completions')) chatBodies.push(JSON.parse(request.postData()));
  });
  await page.goto('/');
  await page.locator('#model-status[data-state="ready"]').waitFor();
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

async function dropFile(file, type) {
  const b64 = readFileSync(file).toString('base64');
  const dataTransfer = await page.evaluateHandle(({ b64, name, type }) => {
    const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    const transfer = new DataTransfer();
    transfer.items.add(new File([bytes], name, { type }));
    return transfer;
  }, { b64, name: path.basename(file), type });
  await page.dispatchEvent('#messages', 'dragenter', { dataTransfer });
  assert.equal(await page.locator('#drop-overlay').isVisible(), true, 'dragging files shows the drop zone');
  await page.dispatchEvent('#messages', 'drop', { dataTransfer });
}

async function setSettings(values) {
  await page.getByRole('button', { name: 'Settings' }).click();
  for (const [label, value] of Object.entries(values)) await page.getByLabel(label, { exact: true }).fill(String(value));
  await page.getByRole('button', { name: 'Save' }).click();
  await page.locator('#settings').waitFor({ state: 'hidden' });
}

const preset = (name) => page.locator('#presets').getByText(name, { exact: true });
// Waits until `locator` matches exactly `n` elements (adding an image is asynchronous).
async function expectCount(locator, n) {
  await page.waitForFunction(([selector, count]) => document.querySelectorAll(selector).length === count, [locator, n]);
}
const lastAnswer = () => page.locator('.message.assistant').last();
// The server releases a request's slot only after the last byte has reached the client, so a
// finished answer on the page does not mean the slot is free yet: wait for the gauge.
async function waitForIdle() {
  const end = Date.now() + 60000;
  while ((await metricValue(server, 'qvl_active_requests')) !== 0 || (await metricValue(server, 'qvl_queue_depth')) !== 0) {
    assert.ok(Date.now() < end, 'the server still generates a minute later');
    await new Promise((r) => setTimeout(r, 50));
  }
}

test('the header names the model, its size, file and the type it runs as', async () => {
  // The tiny golden model: a bf16 safetensors folder, run as q8 (the default).
  assert.match(await page.locator('#model-status-text').textContent(),
    /^qwen3vl-tiny-a · \d+M · safetensors BF16 → q8 · \d+k context$/);
});

test('images by picker and drag and drop, sent once each, answer streams in and can be stopped', async () => {
  await page.locator('#file-input').setInputFiles(SCENE);
  await expectCount('.attachment', 1);
  await dropFile(SHAPES, 'image/png');
  await expectCount('.attachment', 2);
  await page.locator('#file-input').setInputFiles(SCENE);  // the same photo again
  await page.getByText('a_iii_scene_640x480.jpg is attached already.').waitFor();
  assert.equal(await page.locator('.attachment').count(), 2);
  // Remove buttons work and are labelled per image.
  await page.getByRole('button', { name: 'Remove a_ii_shapes_200x120.png' }).click();
  await expectCount('.attachment', 1);
  await dropFile(SHAPES, 'image/png');
  await expectCount('.attachment', 2);

  // Sampled (not greedy) so the tiny model prints visible text; long enough to stop it.
  await setSettings({ Temperature: 1, Seed: 7, 'Max tokens': 90000 });
  await page.getByRole('textbox', { name: 'Question' }).fill('What is in these pictures?');
  await page.getByRole('textbox', { name: 'Question' }).press('Enter');

  const answer = lastAnswer();
  // Model text (not the "Thinking…" placeholder) shows while the answer is still streaming.
  await page.locator('.message.assistant.streaming[data-chars]:not([data-chars="0"]) .markdown > :not(.waiting)').first().waitFor();
  assert.equal(await answer.getAttribute('aria-busy'), 'true');
  await page.getByRole('button', { name: 'Stop generating' }).click();
  await page.locator('.message.assistant.stopped').waitFor();
  await page.getByRole('button', { name: 'Send' }).waitFor();
  assert.equal(await page.evaluate(() => document.activeElement.id), 'prompt', 'focus goes back to the question box');
  assert.match(await answer.locator('.stats').textContent(), /Answer\s*≈ \d+ tok.*Total/s, 'a stopped answer has stats too');
  assert.match(await answer.textContent(), /Stopped\./);
  assert.ok(Number(await answer.getAttribute('data-chars')) > 0, 'the partial answer is kept');

  const body = chatBodies.at(-1);
  assert.equal(body.stream, true);
  assert.equal(body.temperature, 1);
  assert.equal(body.seed, 7);
  assert.equal(body.max_tokens, 90000);
  const parts = body.messages.at(-1).content;
  assert.deepEqual(parts.map((p) => p.type), ['image_url', 'image_url', 'text']);
  assert.match(parts[0].image_url.url, /^data:image\/jpeg;base64,/);
  assert.match(parts[1].image_url.url, /^data:image\/png;base64,/);
  assert.equal(parts[2].text, 'What is in these pictures?');
  // The server frees the slot once the browser stops reading.
  await waitForIdle();
});

test('a follow-up sends the history with each image once and shows the answer stats', async () => {
  await setSettings({ 'Max tokens': 12 });
  // Attaching an image that is already in the conversation does not send it twice.
  await page.locator('#file-input').setInputFiles(SHAPES);
  await expectCount('.attachment', 1);
  await page.getByRole('textbox', { name: 'Question' }).fill('And the second one?');
  await page.getByRole('button', { name: 'Send' }).click();
  await page.locator('.message.assistant.done').waitFor();
  const body = chatBodies.at(-1);
  assert.deepEqual(body.messages.map((m) => m.role), ['user', 'assistant', 'user'], JSON.stringify(body.messages.map((m) => [m.role, typeof m.content === 'string' ? m.content.slice(0, 80) : m.content.length])));
  const images = body.messages.flatMap((m) => (Array.isArray(m.content) ? m.content : []))
    .filter((p) => p.type === 'image_url');
  assert.equal(images.length, 2, 'the re-attached image is not uploaded again');
  assert.equal(body.messages[2].content, 'And the second one?');
  const stats = await lastAnswer().locator('.stats').textContent();
  assert.match(stats, /First token\s*\d/);
  assert.match(stats, /Speed\s*[\d.]+ tok\/s/);
  assert.match(stats, /Prompt\s*\d+ tok/);
  assert.match(stats, /Images\s*\d+ tok/);
  assert.match(stats, /Answer\s*12 tok/);
});

test('the conversation survives a reload and is listed; history length is configurable', async () => {
  await page.reload();
  await page.locator('#model-status[data-state="ready"]').waitFor();
  const listed = page.locator('.conversation-open', { hasText: 'What is in these pictures?' });
  await listed.waitFor();
  assert.equal(await page.locator('.message.user').count(), 2);
  assert.equal(await page.locator('.message.user .message-image').count(), 3, 'images come back from browser storage');
  assert.match(await lastAnswer().locator('.stats').textContent(), /Answer\s*12 tok/);

  await page.getByRole('button', { name: 'New chat', exact: true }).click();
  assert.equal(await page.locator('.message').count(), 0);
  await setSettings({ 'Turns of history sent': 0 });
  await page.getByRole('textbox', { name: 'Question' }).fill('Hello there');
  await page.getByRole('textbox', { name: 'Question' }).press('Enter');
  await page.locator('.message.assistant.done').waitFor();
  assert.equal(await page.locator('.conversation').count(), 2);
  await listed.click();
  assert.equal(await page.locator('.message.user').count(), 2);
  await page.getByRole('textbox', { name: 'Question' }).fill('One more');
  await page.getByRole('textbox', { name: 'Question' }).press('Enter');
  await page.locator('.message.assistant').nth(2).and(page.locator('.done')).waitFor();
  assert.deepEqual(chatBodies.at(-1).messages.map((m) => m.role), ['user'], 'history 0 sends only the question');
  await setSettings({ 'Turns of history sent': 5 });
});

test('Read text sends the strict OCR prompt, greedy', async () => {
  await page.getByRole('button', { name: 'New chat', exact: true }).click();
  await page.locator('#file-input').setInputFiles(SHAPES);
  await expectCount('.attachment', 1);
  await preset('Read text').click();
  await page.getByRole('button', { name: 'Send' }).click();
  await page.locator('.message.assistant.done').waitFor();
  const body = chatBodies.at(-1);
  assert.equal(body.temperature, 0);
  const text = body.messages.at(-1).content.find((p) => p.type === 'text').text;
  assert.match(text, /verbatim/);
  assert.match(text, /Output only the extracted text/);
  assert.match(await page.locator('.message.user .chip').textContent(), /Read text/);
  await preset('Ask').click();
});

// Another client's long answer; resolves once it holds the slot (the server has answered).
async function hogSlot() {
  const hog = new AbortController();
  const res = await fetch(`${server.url}/v1/chat/completions`, {
    method: 'POST', signal: hog.signal, headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'x', stream: true, max_tokens: 90000, messages: [{ role: 'user', content: 'hi' }] }),
  });
  assert.equal(res.status, 200, 'the other client holds the slot');
  await res.body.getReader().read();
  return hog;
}

const answeredLast = (text) => page.waitForFunction((question) => {
  const items = [...document.querySelectorAll('#message-list > li')];
  return items.length > 1 && items.at(-1).matches('.message.assistant.done') && items.at(-2).textContent.includes(question);
}, text);

test('a question waiting in the server queue says so, then is answered', async () => {
  await waitForIdle();
  const hog = await hogSlot();
  await page.getByRole('textbox', { name: 'Question' }).fill('Queued?');
  await page.getByRole('textbox', { name: 'Question' }).press('Enter');
  await page.locator('.message.assistant .waiting', { hasText: /Waiting for a free slot/ }).waitFor();
  assert.equal(await metricValue(server, 'qvl_queue_depth'), 1);
  await page.screenshot({ path: screenshotPath('desktop-light-queued-real') });
  hog.abort();
  await answeredLast('Queued?');
});

test('a 429 from a busy server counts down, retries once by itself, then offers Retry', async () => {
  // Other clients take the only slot and the only queue place, once the last answer has let go.
  await waitForIdle();
  const hog = await hogSlot();
  const waiter = new AbortController();
  fetch(`${server.url}/v1/chat/completions`, {
    method: 'POST', signal: waiter.signal, headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'x', stream: true, max_tokens: 1, messages: [{ role: 'user', content: 'hi' }] }),
  }).catch(() => { /* aborted */ });
  await waitForMetric(server, 'qvl_queue_depth', 1);  // the second client queued
  const sent = chatBodies.length;
  await page.getByRole('textbox', { name: 'Question' }).fill('Are you busy?');
  await page.getByRole('textbox', { name: 'Question' }).press('Enter');
  const banner = page.getByRole('alert');
  await banner.filter({ hasText: /busy.*Retrying in 1 s/ }).waitFor();
  // The retry meets the same busy server: now the banner waits for the user.
  await banner.filter({ hasText: /busy.*Try again in 1 s/ }).waitFor();
  assert.equal(chatBodies.length, sent + 2, 'one automatic retry');
  assert.equal(await page.locator('.message.user', { hasText: 'Are you busy?' }).count(), 1, 'the question is kept');
  await page.screenshot({ path: screenshotPath('desktop-light-429') });

  waiter.abort();
  hog.abort();
  await waitForIdle();
  await banner.getByRole('button', { name: 'Retry' }).click();
  // The answer to this question (not an earlier one) completes.
  await answeredLast('Are you busy?');
  assert.equal(await banner.isVisible(), false);
  assert.equal(chatBodies.length, sent + 3);
  assert.equal(chatBodies.at(-1).messages.at(-1).content, 'Are you busy?');
});

test('TeX that KaTeX cannot parse stays as written, under the page\'s real CSP', async () => {
  // KaTeX's own error rendering sets a style attribute, which the CSP blocks and reports.
  await page.route('**/v1/chat/completions', (route) => route.fulfill({ status: 200, contentType: 'text/event-stream',
    body: sseBody(['It is \\(\\frac{1}{\\) and \\(x^2\\).']) }));
  await page.locator('#prompt').fill('Maths?');
  await page.locator('#send').click();
  await lastAnswer().locator('.math-inline .katex').waitFor();
  await page.unroute('**/v1/chat/completions');
  assert.equal(await lastAnswer().locator('.math-inline').first().textContent(), '\\frac{1}{');
  assert.equal(await lastAnswer().locator('.katex-error').count(), 0);
});

test('no request leaves the server origin and the page logs no errors', async () => {
  assert.deepEqual(foreignRequests(log, server.url), []);
  assert.ok(log.requests.some((u) => u.includes('/assets/app.')), 'the bundle was loaded');
  // The 429 of the previous test is the only error the browser logs (as a failed resource).
  assert.deepEqual(log.errors.filter((e) => !/status of 429/.test(e)), []);
});
