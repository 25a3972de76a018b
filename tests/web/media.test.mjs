// Videos and documents in the page against a real `qvl serve` (tiny model): a clip made here by
// the ffmpeg program shows the server's sampled frames, timestamps and token count, is sent as a
// video_url part and answered; times in an answer open their frame; a PDF made here shows its
// pages to choose, is read page by page (one request per page, in order) and downloads; files
// over the server's limit are refused before upload and a server 400 shows its message.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startServer } from '../server/helpers.mjs';
import { makePdf, pdfText } from '../server/make_pdf.mjs';
import { axeViolations, foreignRequests, launchBrowser, openPage, screenshotPath, sseBody } from './browser.mjs';

let server;
let browser;
let page;
let log;
let tmp;
let clip;
let pdf;
const previews = [];
const chats = [];

before(async () => {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'qvl-web-media-'));
  clip = path.join(tmp, 'clip.mp4');  // 2 s, 128x96, 10 fps: 4 frames sampled at 2 fps
  execFileSync('ffmpeg', ['-v', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc=size=128x96:rate=10', '-t', '2',
    '-c:v', 'libx264', '-pix_fmt', 'yuv420p', '-g', '5', clip]);
  pdf = path.join(tmp, 'letters.pdf');
  writeFileSync(pdf, makePdf([1, 2, 3].map((n) => ({ content: pdfText(72, 700, 36, `Letter page ${n}`) }))));
  server = await startServer(['--document-page-tokens', '64', '--max-video-mb', '1']);
  browser = await launchBrowser();
  ({ page, log } = await openPage(browser, server.url, { bypassCSP: true }));
  page.on('request', (request) => {
    if (request.url().endsWith('/v1/media/preview')) previews.push(JSON.parse(request.postData()).part);
    if (request.url().endsWith('/v1/chat/completions')) chats.push(JSON.parse(request.postData()));
  });
  await page.goto('/');
  await page.locator('#model-status[data-state="ready"]').waitFor();
});

after(async () => {
  await browser?.close();
  await server?.stop();
  rmSync(tmp, { recursive: true, force: true });
});

async function serverPreview(part) {
  const res = await fetch(`${server.url}/v1/media/preview`, { method: 'POST', body: JSON.stringify({ part }) });
  assert.equal(res.status, 200);
  return res.json();
}
const dataUri = (file, type) => `data:${type};base64,${readFileSync(file).toString('base64')}`;
const lastAnswer = () => page.locator('.message.assistant').last();

test('a video: the server\'s frames, timestamps and tokens, sent as video_url and answered', async () => {
  await page.locator('#file-input').setInputFiles(clip);
  const tile = page.locator('.attachment.media.video');
  await tile.locator('.frame').first().waitFor();
  const expected = await serverPreview({ type: 'video_url', video_url: { url: dataUri(clip, 'video/mp4') } });
  assert.equal(await tile.locator('.frame').count(), expected.sampled_frames);
  assert.deepEqual(await tile.locator('.frame-time').allTextContents(), expected.frames.map((f) => `${f.timestamp.toFixed(1)} s`));
  assert.equal(await tile.locator('.tile-tokens').getAttribute('data-tokens'), String(expected.video_tokens));
  assert.match(await tile.locator('.tile-meta').first().textContent(), /^2\.0 s · 4 frames · h264$/);
  await page.screenshot({ path: screenshotPath('desktop-light-video-tile') });
  assert.deepEqual(await axeViolations(page, { scope: '#composer' }), []);

  // A per-request setting asks the server again, and goes with the part.
  await tile.getByText('Video settings').click();
  await tile.getByLabel('Max frames').fill('2');
  await tile.getByLabel('Max frames').press('Tab');
  await page.waitForFunction(() => document.querySelectorAll('.attachment.media.video .frame').length === 2);
  assert.equal(await tile.locator('.tile-tokens').getAttribute('data-tokens'), '12');
  assert.equal(previews.at(-1).video_url.max_frames, 2);
  assert.equal(await tile.locator('details.media-settings').getAttribute('open'), '', 'the settings stay open');
  assert.equal(await page.evaluate(() => document.activeElement.dataset.setting), 'max_frames', 'and keep the focus');

  await page.locator('#prompt').fill('What happens?');
  await page.locator('#send').click();
  await page.locator('.message.assistant.done').waitFor({ timeout: 60000 });
  const sent = chats.at(-1).messages.at(-1).content;
  assert.equal(sent[0].type, 'video_url');
  assert.match(sent[0].video_url.url, /^data:video\/mp4;base64,/);
  assert.equal(sent[0].video_url.max_frames, 2);
  assert.equal(await page.locator('.message.user .media-card .frame').count(), 2, 'the question shows its frames');
});

test('times in an answer link to the nearest sampled frame', async () => {
  await page.route('**/v1/chat/completions', (route) => route.fulfill({ status: 200, contentType: 'text/event-stream',
    body: sseBody(['The square moves at <1.5 seconds> ', 'and stops at 0:00.']) }));
  await page.locator('#prompt').fill('When does it move?');
  await page.locator('#send').click();
  await lastAnswer().locator('.time-link').first().waitFor();
  await page.unroute('**/v1/chat/completions');
  assert.deepEqual(await lastAnswer().locator('.time-link').allTextContents(), ['<1.5 seconds>', '0:00']);
  const videoParts = chats.at(-1).messages.flatMap((m) => (Array.isArray(m.content) ? m.content : [])).filter((p) => p.type === 'video_url');
  assert.equal(videoParts.length, 1, 'a follow-up sends the video again, once, with its question');
  // Two frames (0 and 19) in one pair at 0.95 s: both times open that pair's first frame.
  await lastAnswer().locator('.time-link').first().click();
  await page.locator('#lightbox[open] .frame-figure').waitFor();
  assert.equal(await page.locator('#lightbox .frame-figure').getAttribute('data-timestamp'), '0.95');
  assert.match(await page.locator('#lightbox-title').textContent(), /clip\.mp4 at 0\.9|clip\.mp4 at 1\.0/);
  await page.keyboard.press('Escape');
});

test('a PDF: pages to choose, read one request per page in order, downloads', async () => {
  await page.locator('#new-chat').click();
  await page.locator('#file-input').setInputFiles(pdf);
  const tile = page.locator('.attachment.media.document');
  await tile.locator('.page-thumb').first().waitFor();
  assert.equal(await tile.locator('.page-thumb[aria-pressed="true"]').count(), 3);
  await tile.locator('.page-thumb[data-page="1"]').click();
  await page.waitForFunction(() => document.querySelectorAll('.attachment.media.document .page-thumb[aria-pressed="true"]').length === 2);
  assert.equal(await page.evaluate(() => document.activeElement.dataset.page), '1', 'the page clicked keeps the focus');
  assert.equal(previews.at(-1).file.pages, '2-3');
  assert.deepEqual(await axeViolations(page, { scope: '#composer' }), []);
  const expected = await serverPreview({ type: 'file', file: { file_data: dataUri(pdf, 'application/pdf'), filename: 'letters.pdf', pages: '2-3' } });
  await page.waitForFunction((n) => document.querySelector('.attachment.media.document .tile-tokens')?.dataset.tokens === String(n), expected.image_tokens);
  // The range field chooses too; a bad range is refused in the page.
  await tile.getByLabel('Pages', { exact: true }).fill('9');
  await tile.getByLabel('Pages', { exact: true }).press('Tab');
  await tile.locator('.tile-error').waitFor();
  assert.equal(await tile.getByLabel('Pages', { exact: true }).inputValue(), '2-3', 'the choice stays as it was');
  await tile.getByLabel('Pages', { exact: true }).fill('2,3');
  await tile.getByLabel('Pages', { exact: true }).press('Tab');
  await page.waitForFunction(() => !document.querySelector('.attachment.media.document .tile-error') && document.querySelector('.attachment.media.document:not(.pending)'));
  assert.equal(previews.at(-1).file.pages, '2,3');

  const before = chats.length;
  await tile.getByRole('button', { name: 'Read each page' }).click();
  await lastAnswer().locator('.ocr-page').first().waitFor();
  await page.waitForFunction(() => document.querySelectorAll('.message.assistant.done .ocr-page[data-state="done"]').length === 2, null, { timeout: 120000 });
  const pageRequests = chats.slice(before);
  assert.deepEqual(pageRequests.map((b) => b.messages[0].content[0].file.pages), ['2', '3'], 'one request per page, in order');
  assert.ok(pageRequests.every((b) => b.temperature === 0 && /Read all the text/.test(b.messages[0].content[1].text)));
  assert.deepEqual(await lastAnswer().locator('.ocr-page').evaluateAll((items) => items.map((i) => i.dataset.page)), ['2', '3']);
  assert.equal(await lastAnswer().locator('.ocr-page img').count(), 2, 'each page beside its thumbnail');
  await page.screenshot({ path: screenshotPath('desktop-light-document-pages') });
  assert.deepEqual(await axeViolations(page, { scope: '#message-list' }), []);

  const texts = await lastAnswer().locator('.ocr-page-text').allTextContents();
  const json = page.waitForEvent('download');
  await lastAnswer().getByRole('button', { name: 'Download .json' }).click();
  const pages = JSON.parse(readFileSync(await (await json).path(), 'utf8'));
  assert.deepEqual(pages.map((p) => p.page), [2, 3]);
  assert.deepEqual(pages.map((p) => p.text.replace(/\s+/g, ' ').trim()), texts.map((t) => t.replace(/\s+/g, ' ').trim()));
  const txt = page.waitForEvent('download');
  await lastAnswer().getByRole('button', { name: 'Download .txt' }).click();
  assert.match(readFileSync(await (await txt).path(), 'utf8'), /^--- Page 2 ---\n[\s\S]*\n\n--- Page 3 ---\n/);
  const md = page.waitForEvent('download');
  await lastAnswer().getByRole('button', { name: 'Download .md' }).click();
  assert.match(readFileSync(await (await md).path(), 'utf8'), /^# letters\.pdf\n\n## Page 2\n[\s\S]*## Page 3\n/);
});

test('a file over the server\'s limit is refused before upload; a server 400 shows its message', async () => {
  const big = path.join(tmp, 'big.mp4');
  const bytes = Buffer.alloc(1536 * 1024);
  bytes.write('ftypisom', 4, 'latin1');
  writeFileSync(big, bytes);
  const asked = previews.length;
  await page.locator('#file-input').setInputFiles(big);
  await page.waitForFunction(() => /Could not add big\.mp4/.test(document.getElementById('notice').textContent));
  assert.match(await page.locator('#notice').textContent(), /it is 1\.5 MB; this server takes videos up to 1\.0 MB/);
  assert.equal(previews.length, asked, 'nothing was uploaded');

  const broken = path.join(tmp, 'broken.mp4');
  writeFileSync(broken, bytes.subarray(0, 4096));
  await page.locator('#file-input').setInputFiles(broken);
  await page.waitForFunction(() => /Could not add broken\.mp4/.test(document.getElementById('notice').textContent));
  assert.equal(previews.length, asked + 1);
  const refused = await fetch(`${server.url}/v1/media/preview`, { method: 'POST',
    body: JSON.stringify({ part: { type: 'video_url', video_url: { url: dataUri(broken, 'video/mp4') } } }) });
  assert.equal(refused.status, 400);
  const { message } = (await refused.json()).error;
  assert.ok((await page.locator('#notice').textContent()).includes(message.replace('broken.mp4', 'it').slice(0, 60)),
    `the notice shows the server's message: ${message}`);
  assert.equal(await page.locator('.attachment').count(), 0);
});

test('a PDF dropped on the page attaches like one picked', async () => {
  const b64 = readFileSync(pdf).toString('base64');
  const transfer = await page.evaluateHandle((data) => {
    const t = new DataTransfer();
    t.items.add(new File([Uint8Array.from(atob(data), (c) => c.charCodeAt(0))], 'dropped.pdf', { type: 'application/pdf' }));
    return t;
  }, b64);
  await page.dispatchEvent('#messages', 'drop', { dataTransfer: transfer });
  await page.locator('.attachment.media.document .page-thumb').first().waitFor();
  assert.equal(await page.locator('.attachment.media.document .page-thumb').count(), 3);
  await page.getByRole('button', { name: 'Remove dropped.pdf' }).click();
});

test('after a reload a video is shown from its stored preview, without its bytes, and not sent', async () => {
  await page.reload();
  await page.locator('#model-status[data-state="ready"]').waitFor();
  await page.locator('.conversation-open').filter({ hasText: 'What happens?' }).click();
  const card = page.locator('.message.user .media-card.video').first();
  await card.waitFor();
  assert.equal(await card.locator('.frame').count(), 2);
  assert.match(await card.textContent(), /Not stored in the browser/);
  const stored = await page.evaluate(() => new Promise((resolve) => {
    const open = indexedDB.open('qvl', 1);
    open.onsuccess = () => {
      const request = open.result.transaction('images').objectStore('images').getAll();
      request.onsuccess = () => resolve(request.result.filter((r) => r.kind).map((r) => ({ kind: r.kind, dataUrl: r.dataUrl, bytes: JSON.stringify(r).length })));
    };
  }));
  assert.ok(stored.length >= 2 && stored.every((r) => r.dataUrl === null), 'videos and documents are stored without their bytes');
  assert.ok(stored.every((r) => r.bytes < 64 * 1024), `their previews are small: ${stored.map((r) => r.bytes)}`);
  await page.route('**/v1/chat/completions', (route) => route.fulfill({ status: 200, contentType: 'text/event-stream', body: sseBody(['Fine']) }));
  await page.locator('#prompt').fill('And then?');
  await page.locator('#send').click();
  await page.waitForFunction(() => document.querySelector('.message.assistant:last-child')?.textContent.includes('Fine'));
  await page.unroute('**/v1/chat/completions');
  assert.ok(chats.at(-1).messages.every((m) => typeof m.content === 'string'), 'the video is no longer sent');
});

test('phone width: the video question and the page-by-page answer fit', async () => {
  await page.setViewportSize({ width: 390, height: 844 });
  await page.locator('#file-input').setInputFiles(clip);
  await page.locator('.attachment.media.video .frame').first().waitFor();
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  assert.ok(overflow <= 0, `no sideways scrolling (${overflow} px)`);
  await page.screenshot({ path: screenshotPath('phone-light-video-tile') });
  await page.getByRole('button', { name: 'Remove clip.mp4' }).click();
  await page.locator('.message.assistant').last().scrollIntoViewIfNeeded();
  await page.screenshot({ path: screenshotPath('phone-light-document-pages') });
  await page.setViewportSize({ width: 1280, height: 800 });
  assert.deepEqual(foreignRequests(log, server.url), []);
  assert.deepEqual(log.errors.filter((e) => !/status of 400/.test(e)), []);
});
