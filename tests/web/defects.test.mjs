// The page's defects fixed, against canned answers and a real `qvl serve` (see canned.mjs):
// refused questions, images still being prepared, images in context, formats and thin images
// (with the token estimate checked against the server), 429 countdown and queue, OCR text,
// Markdown, undo, phone layout, axe, and the status dot when the server dies. Screenshots of
// each state go to the artifacts folder.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { axeViolations, foreignRequests, pasteImages, screenshotPath, sseBody } from './browser.mjs';
import { W, ask, lastAnswer, newChat, preset, question, ready, replay, sentImages, startWorkspace, stopWorkspace } from './canned.mjs';

let page;
let log;
let server;
const bodies = W.bodies;

before(async () => {
  await startWorkspace();
  ({ page, log, server } = W);
});

after(stopWorkspace);

test('axe: no serious or critical violations on the empty page and in settings, light and dark', async () => {
  for (const scheme of ['light', 'dark']) {
    // Dark changes only colours: the contrast rule is what can differ.
    const rules = scheme === 'dark' ? ['color-contrast'] : null;
    await page.emulateMedia({ colorScheme: scheme });
    assert.deepEqual(await axeViolations(page, { rules }), [], `empty page, ${scheme}`);
    await page.getByRole('button', { name: 'Settings' }).click();
    await page.locator('#settings[open]').waitFor();
    assert.deepEqual(await axeViolations(page, { rules, scope: '#settings' }), [], `settings, ${scheme}`);
    await page.keyboard.press('Escape');
  }
  await page.emulateMedia({ colorScheme: 'light' });
});

test('a refused question is marked, left out of the context and comes back to the composer', async () => {
  await pasteImages(page, [{ name: 'red.png', width: 64, height: 64, colour: '#cc0000' }]);
  await ready(1);
  W.reply = () => (route) => route.fulfill({ status: 400, contentType: 'application/json',
    body: JSON.stringify({ error: { message: 'image 1 cannot be decoded', type: 'invalid_request_error' } }) });
  await question().fill('What is this?');
  await question().press('Enter');
  await page.locator('.message.user.failed').waitFor();
  const banner = page.getByRole('alert');
  assert.match(await banner.textContent(), /refused the request \(400\)/);
  assert.equal(await banner.getByRole('button', { name: 'Retry' }).isVisible(), false, 'no Retry for a 400');
  assert.equal(await question().inputValue(), 'What is this?');
  assert.equal(await page.locator('.attachment.ready').count(), 1, 'the image is back, to be removed');
  assert.match(await page.locator('.failed-note').textContent(), /left out of the conversation/);
  await page.screenshot({ path: screenshotPath('desktop-light-refused') });
  assert.deepEqual(await axeViolations(page), []);
  await page.getByRole('button', { name: 'Remove red.png' }).click();
  W.reply = () => sseBody(['Fine']);
  await ask('Hello');
  const body = bodies.at(-1);
  assert.deepEqual(body.messages.map((m) => m.content), ['Hello'], 'the refused turn and its image are not sent again');
});

test('Send waits for an image being prepared, which never joins another conversation', async () => {
  await newChat();
  const state = await page.evaluate(async () => {
    const canvas = new OffscreenCanvas(1200, 900);
    const ctx = canvas.getContext('2d');
    const data = ctx.createImageData(1200, 900);
    for (let i = 0; i < data.data.length; i++) data.data[i] = (i * 2654435761) >>> 24;
    ctx.putImageData(data, 0, 0);
    const blob = await canvas.convertToBlob({ type: 'image/png' });
    const transfer = new DataTransfer();
    transfer.items.add(new File([blob], 'big-noise.png', { type: 'image/png' }));
    const prompt = document.getElementById('prompt');
    prompt.value = 'Too early?';
    prompt.dispatchEvent(new ClipboardEvent('paste', { clipboardData: transfer, bubbles: true, cancelable: true }));
    // Synchronously after the paste: a pending tile, Send disabled, Enter does not send.
    const seen = { pending: !!document.querySelector('.attachment.pending .spinner'), disabled: document.getElementById('send').disabled };
    prompt.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', bubbles: true, cancelable: true }));
    seen.messages = document.querySelectorAll('.message').length;
    seen.name = document.querySelector('.attachment.pending .tile-name').textContent;
    seen.meta = /^(Reading|Decoding)… [\d.]+ (KB|MB)$/.test(document.querySelector('.attachment.pending .tile-meta').textContent);
    return seen;
  });
  assert.deepEqual(state, { pending: true, disabled: true, messages: 0, name: 'big-noise.png', meta: true });
  await page.screenshot({ path: screenshotPath('desktop-light-pending') });
  // Another conversation while it is prepared: it stays with the one it was added to.
  await page.locator('.conversation-open').filter({ hasText: 'What is this?' }).click();
  await page.locator('.message.user.failed').waitFor();
  await page.waitForFunction(() => document.querySelectorAll('.attachment').length === 0);
  await ask('Still here?');
  assert.equal(sentImages(bodies.at(-1)).length, 0, 'the image being prepared did not ride along');
  await page.locator('.conversation-open').filter({ hasText: 'New chat' }).click();
  await ready(1);
  assert.equal(await page.locator('#send').isDisabled(), false);
  assert.match(await page.locator(".attachment .tile-meta").textContent(), /^1200×900 · [\d.]+ (KB|MB)$/);
  await page.getByRole('button', { name: 'Remove big-noise.png' }).click();
});

test('SVG is re-encoded to PNG and a 1x3000 image padded; estimates match the server', async () => {
  await question().fill('');
  await pasteImages(page, [
    { name: 'logo.svg', type: 'image/svg+xml', text: '<svg xmlns="http://www.w3.org/2000/svg" width="120" height="80"><rect width="120" height="80" fill="#0a7"/></svg>' },
    { name: 'thin-line.png', width: 1, height: 3000, colour: '#222222' },
  ]);
  await ready(2);
  await page.getByText(/thin-line\.png is 1×3000, thinner than the 200:1 the model accepts: it was padded to 32×3000/).waitFor();
  const tokens = await page.locator('.tile-tokens').evaluateAll((els) => els.map((e) => Number(e.dataset.tokens)));
  const total = Number(await page.locator('#image-budget').getAttribute('data-tokens'));
  assert.equal(total, tokens[0] + tokens[1]);
  assert.match(await page.locator('#image-budget').textContent(), /of 4096 per request/);
  await page.screenshot({ path: screenshotPath('desktop-light-attachments') });
  W.reply = () => sseBody(['Two images']);
  await ask('Describe both');
  const images = sentImages(bodies.at(-1));
  assert.equal(images.length, 2);
  for (const image of images) assert.match(image.image_url.url, /^data:image\/png;base64,/);
  const res = await replay(bodies.at(-1));
  assert.equal(res.status, 200, JSON.stringify(res.json));
  assert.equal(res.json.timings.image_tokens, total, 'the page estimated what the server spent');
  // The thin image is visible in the thread (not 0 px wide).
  const widths = await page.locator('.message.user .message-image').evaluateAll((els) => els.map((e) => e.getBoundingClientRect().width));
  assert.ok(widths.every((w) => w >= 20), `thumbnails ${widths}`);
});

test('images stay in context after their turn leaves the history; past the limit they are marked', async () => {
  await newChat();
  await page.getByRole('button', { name: 'Settings' }).click();
  await page.getByLabel('Turns of history sent', { exact: true }).fill('1');
  await page.getByRole('button', { name: 'Save' }).click();
  const colours = ['#aa0000', '#00aa00', '#0000aa', '#aaaa00'];
  for (const [i, colour] of colours.entries()) {
    await pasteImages(page, [{ name: `colour-${i}.png`, width: 40 + i, height: 40, colour }]);
    await ready(1);
    await ask(`Image ${i}?`);
  }
  // Turn 4 (history 1): three images (the server's limit), though only one turn of text.
  const body = bodies.at(-1);
  assert.equal(body.messages.filter((m) => m.role === 'user').length, 2);
  assert.equal(sentImages(body).length, 3);
  const out = page.locator('.out-of-context');
  assert.equal(await out.count(), 1, 'the oldest image is marked');
  assert.match(await out.textContent(), /Not in context/);
  assert.match(await page.locator('.context-divider').textContent(), /no longer sees 1 earlier image.*at most 3 images per request/);
  await page.screenshot({ path: screenshotPath('desktop-light-context-divider') });
  await page.getByRole('button', { name: 'Settings' }).click();
  await page.getByLabel('Turns of history sent', { exact: true }).fill('');
  await page.getByRole('button', { name: 'Save' }).click();
});

test('a 429 counts down and retries once by itself; a queued request says so; Escape stops', async () => {
  let release;
  let calls = 0;
  W.reply = () => {
    calls += 1;
    if (calls === 1) {
      return (route) => route.fulfill({ status: 429, headers: { 'Retry-After': '1', 'content-type': 'application/json' },
        body: JSON.stringify({ error: { message: 'busy', type: 'rate_limit_error' } }) });
    }
    return async (route) => {
      await new Promise((resolve) => { release = resolve; });
      await route.fulfill({ status: 200, headers: { 'content-type': 'text/event-stream' }, body: sseBody(['Got a slot']) }).catch(() => {});
    };
  };
  // While the chat request waits, the server reports a queue.
  await page.route('**/metrics', (route) => route.fulfill({ status: 200, contentType: 'text/plain',
    body: 'qvl_queue_depth 1\nqvl_active_requests 1\nprocess_cpu_seconds_total 5\nprocess_resident_memory_bytes 1073741824\n' }));
  await question().fill('Busy?');
  await question().press('Enter');
  await page.getByRole('alert').filter({ hasText: /busy.*Retrying in \d s/ }).waitFor();
  await page.screenshot({ path: screenshotPath('desktop-light-429-countdown') });
  await page.locator('.waiting', { hasText: /Waiting for a free slot/ }).waitFor();
  assert.equal(calls, 2, 'retried once, by itself');
  await page.screenshot({ path: screenshotPath('desktop-light-queued') });
  assert.match(await page.locator('#monitor').textContent(), /CPU.*1\.00 GB · 1 active · 1 queued · q8 · \d+ threads/);
  await page.unroute('**/metrics');
  // Escape stops the waiting request; focus goes back to the question box.
  await page.locator('#stop').focus();
  await page.keyboard.press('Escape');
  await page.locator('.message.assistant.stopped').waitFor();
  assert.equal(await page.evaluate(() => document.activeElement.id), 'prompt');
  release();
  W.reply = () => sseBody(['Hello']);
});

test('OCR answers are preformatted text with Copy text, a formatted view and a download', async () => {
  const receipt = '# 42 MAIN ST\nMilk        1.99\nBread       2.49\n-- TOTAL    4.48';
  W.reply = () => sseBody([receipt]);
  await pasteImages(page, [{ name: 'receipt.png', width: 80, height: 120, colour: '#eeeeee' }]);
  await ready(1);
  await preset('Read text').click();
  await page.getByRole('button', { name: 'Send' }).click();
  await page.locator('.ocr-text').waitFor();
  assert.equal(await page.locator('.ocr-text').textContent(), receipt, 'columns and # lines kept as written');
  assert.equal(await lastAnswer().locator('h3').count(), 0);
  await lastAnswer().getByRole('button', { name: 'Copy text' }).click();
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), receipt);
  const download = page.waitForEvent('download');
  await lastAnswer().getByRole('button', { name: 'Download .txt' }).click();
  assert.equal(readFileSync(await (await download).path(), 'utf8'), receipt);
  await lastAnswer().getByRole('button', { name: 'Beside the image' }).click();
  await lastAnswer().locator('.side-by-side .ocr-image img').waitFor();
  const [image, text] = await Promise.all([lastAnswer().locator('.ocr-image').boundingBox(), lastAnswer().locator('.ocr-text').boundingBox()]);
  assert.ok(text.x >= image.x + image.width - 1, 'text beside the image');
  await page.screenshot({ path: screenshotPath('desktop-light-ocr') });
  const md = page.waitForEvent('download');
  await lastAnswer().getByRole('button', { name: 'Download .md' }).click();
  assert.equal((await md).suggestedFilename().endsWith('.md'), true);
  await lastAnswer().getByRole('button', { name: 'Show formatted' }).click();
  await lastAnswer().locator('.markdown h3').waitFor();
  await lastAnswer().getByRole('button', { name: 'Show raw text' }).click();
  await preset('Ask').click();
});

test('Markdown keeps table alignment, demotes headings, code and tables scroll by keyboard', async () => {
  W.reply = () => sseBody(['# Big\n\n## Smaller\n\n| Item | Price |\n|:-----|------:|\n| Milk | 1.99 |\n\n',
    '```\n' + 'x'.repeat(400) + '\n```\n']);
  await ask('Table please');
  const md = lastAnswer().locator('.markdown');
  assert.equal(await md.locator('h1, h2').count(), 0);
  assert.equal(await md.locator('h3').textContent(), 'Big');
  assert.equal(await md.locator('h4').textContent(), 'Smaller');
  assert.equal(await md.locator('td').nth(1).evaluate((e) => getComputedStyle(e).textAlign), 'right');
  assert.equal(await md.locator('pre').getAttribute('tabindex'), '0');
  assert.deepEqual(await axeViolations(page), []);
  // Heading order: the page's h1, then h2 per message, then the model's h3.
  const moderate = await axeViolations(page, { impacts: ['moderate'] });
  assert.deepEqual(moderate.filter((v) => v.startsWith('heading-order')), []);
});

test('delete has an undo; the × shows on hover or focus only', async () => {
  const count = await page.locator('.conversation').count();
  const item = page.locator('.conversation').first();
  assert.equal(await item.locator('.conversation-delete').evaluate((e) => getComputedStyle(e).opacity), '0');
  await item.hover();
  assert.equal(await item.locator('.conversation-delete').evaluate((e) => getComputedStyle(e).opacity), '1');
  const title = await item.locator('.conversation-title').textContent();
  await item.locator('.conversation-delete').click();
  await page.locator('#toast', { hasText: `Deleted “${title}”` }).waitFor();
  assert.equal(await page.locator('.conversation').count(), count - 1);
  await page.screenshot({ path: screenshotPath('desktop-light-undo') });
  await page.getByRole('button', { name: 'Undo' }).click();
  await page.waitForFunction((n) => document.querySelectorAll('.conversation').length === n, count);
  assert.equal(await page.locator('.conversation-title', { hasText: title }).count() >= 1, true);
});

test('phone: long names do not widen the page, presets stay on one row, the drawer keeps focus', async () => {
  await page.setViewportSize({ width: 390, height: 844 });
  await pasteImages(page, [{ name: `${'a-very-long-file-name-'.repeat(12)}.png`, width: 30, height: 30 }]);
  await ready(1);
  await page.locator('#file-input').setInputFiles({ name: `${'b'.repeat(300)}.txt`, mimeType: 'text/plain', buffer: Buffer.from('x') });
  await page.locator('#notice:not(:empty)').waitFor();
  assert.equal(await page.evaluate(() => document.documentElement.scrollWidth), 390);
  const rows = await page.locator('.preset').evaluateAll((els) => new Set(els.map((e) => Math.round(e.getBoundingClientRect().top))).size);
  assert.equal(rows, 1);
  await page.screenshot({ path: screenshotPath('phone-light-long-name') });
  await page.getByRole('button', { name: 'Show conversations' }).click();
  await page.locator('#sidebar').waitFor();
  for (let i = 0; i < 12; i++) await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => !!document.activeElement.closest('#sidebar')), true, 'focus stays in the drawer');
  await page.keyboard.press('Escape');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'menu-button');
  assert.deepEqual(await axeViolations(page), []);
  await page.emulateMedia({ colorScheme: 'dark' });
  assert.deepEqual(await axeViolations(page, { rules: ['color-contrast'] }), []);
  await page.screenshot({ path: screenshotPath('phone-dark-workspace') });
  await page.emulateMedia({ colorScheme: 'light' });
  await page.setViewportSize({ width: 1280, height: 800 });
});

test('the status dot turns red when the server stops answering', async () => {
  assert.deepEqual(foreignRequests(log, server.url), []);
  assert.deepEqual(log.errors.filter((e) => !/status of (400|429)/.test(e)), []);
  await server.stop();
  await page.locator('#model-status[data-state="error"]').waitFor();
  assert.match(await page.locator('#model-status').textContent(), /unreachable/);
  await page.screenshot({ path: screenshotPath('desktop-light-server-down') });
});
