// The vision workspace against canned answers (page.route) and a real `qvl serve` (tiny model,
// at most 3 images per request): refused questions, images still being prepared, images in
// context, formats and thin images, 429 countdown, OCR text, Markdown, grounding on several
// images, undo, lightbox, monitor, contrast, axe, phone layout, and the status dot when the
// server dies. Screenshots of each new state go to the artifacts folder.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { startServer } from '../server/helpers.mjs';
import { axeViolations, foreignRequests, launchBrowser, openPage, pasteImages, screenshotPath, sseBody } from './browser.mjs';

let server;
let browser;
let page;
let log;
let reply = () => sseBody(['Hello']);
const bodies = [];

before(async () => {
  server = await startServer(['--max-images', '3']);
  browser = await launchBrowser();
  ({ page, log } = await openPage(browser, server.url, { bypassCSP: true }));
  page.setDefaultTimeout(20000);
  await page.route('**/v1/chat/completions', async (route) => {
    bodies.push(JSON.parse(route.request().postData()));
    const answer = reply();
    if (typeof answer === 'string') {
      await route.fulfill({ status: 200, headers: { 'content-type': 'text/event-stream' }, body: answer });
    } else {
      await answer(route);
    }
  });
  await page.goto('/');
  await page.locator('#model-status[data-state="ready"]').waitFor();
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

const question = () => page.getByRole('textbox', { name: 'Question' });
const preset = (name) => page.locator('#presets').getByText(name, { exact: true });
const lastAnswer = () => page.locator('.message.assistant').last();
const ready = (n) => page.waitForFunction((count) => document.querySelectorAll('.attachment.ready').length === count
  && !document.querySelector('.attachment.pending'), n).catch(async (error) => {
  throw new Error(`${error.message}; attachments: ${await page.locator('.attachment').count()}, notice: ${await page.locator('#notice').textContent()}`);
});
const sentImages = (body) => body.messages.flatMap((m) => (Array.isArray(m.content) ? m.content : [])).filter((p) => p.type === 'image_url');
async function newChat() {
  await page.getByRole('button', { name: 'New chat', exact: true }).click();
  await page.locator('.message').first().waitFor({ state: 'detached' });
}
async function ask(text) {
  const before = await page.locator('.message.assistant:not(.streaming)').count();
  await question().fill(text);
  await question().press('Enter');
  await page.waitForFunction((n) => document.querySelectorAll('.message.assistant:not(.streaming)').length > n, before);
}
// The request the page sent, replayed against the real server (not streamed, one token).
async function replay(body) {
  const res = await fetch(`${server.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ ...body, stream: false, stream_options: undefined, max_tokens: 1 }),
  });
  return { status: res.status, json: await res.json() };
}

test('axe: no serious or critical violations on the empty page and in settings, light and dark', async () => {
  for (const scheme of ['light', 'dark']) {
    await page.emulateMedia({ colorScheme: scheme });
    assert.deepEqual(await axeViolations(page), [], `empty page, ${scheme}`);
    await page.getByRole('button', { name: 'Settings' }).click();
    await page.locator('#settings[open]').waitFor();
    assert.deepEqual(await axeViolations(page), [], `settings, ${scheme}`);
    await page.keyboard.press('Escape');
  }
  await page.emulateMedia({ colorScheme: 'light' });
});

test('a refused question is marked, left out of the context and comes back to the composer', async () => {
  await pasteImages(page, [{ name: 'red.png', width: 64, height: 64, colour: '#cc0000' }]);
  await ready(1);
  reply = () => (route) => route.fulfill({ status: 400, contentType: 'application/json',
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
  reply = () => sseBody(['Fine']);
  await ask('Hello');
  const body = bodies.at(-1);
  assert.deepEqual(body.messages.map((m) => m.content), ['Hello'], 'the refused turn and its image are not sent again');
});

test('Send waits for an image being prepared, which never joins another conversation', async () => {
  await newChat();
  const state = await page.evaluate(async () => {
    const canvas = new OffscreenCanvas(2400, 1800);
    const ctx = canvas.getContext('2d');
    const data = ctx.createImageData(2400, 1800);
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
    return seen;
  });
  assert.deepEqual(state, { pending: true, disabled: true, messages: 0, name: 'big-noise.png' });
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
  assert.match(await page.locator(".attachment .tile-meta").textContent(), /^\d+×\d+ · [\d.]+ MB$/);
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
  reply = () => sseBody(['Two images']);
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
  reply = () => {
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
  reply = () => sseBody(['Hello']);
});

test('Continue resumes an answer cut short; Regenerate keeps the old answer as a version', async () => {
  reply = () => sseBody(['Part one'], { finish: 'length' });
  await ask('Long story');
  await lastAnswer().getByText('Reached the max tokens limit.').waitFor();
  reply = () => sseBody([' and part two.']);
  await lastAnswer().getByRole('button', { name: 'Continue' }).click();
  await page.locator('.message.assistant.done', { hasText: 'Part one and part two.' }).waitFor();
  const sent = bodies.at(-1).messages.slice(-3);
  assert.deepEqual(sent.map((m) => m.role), ['user', 'assistant', 'user']);
  assert.equal(sent[1].content, 'Part one');
  assert.match(sent[2].content, /Continue your previous answer/);
  assert.equal(await page.locator('.message.assistant').filter({ hasText: 'Part one' }).count(), 1, 'one answer, continued in place');

  reply = () => sseBody(['Another take.']);
  await lastAnswer().getByRole('button', { name: 'Regenerate' }).click();
  await page.locator('.message.assistant.done', { hasText: 'Another take.' }).waitFor();
  assert.equal(await lastAnswer().locator('.version-count').textContent(), '2 / 2');
  await lastAnswer().getByRole('button', { name: 'Previous version' }).click();
  await page.locator('.message.assistant', { hasText: 'Part one and part two.' }).waitFor();
  assert.equal(await lastAnswer().locator('.version-count').textContent(), '1 / 2');
  await page.screenshot({ path: screenshotPath('desktop-light-versions') });
  // The next question carries the version on screen.
  reply = () => sseBody(['ok']);
  await ask('Thanks');
  assert.equal(bodies.at(-1).messages.at(-2).content, 'Part one and part two.');
});

test('OCR answers are preformatted text with Copy text, a formatted view and a download', async () => {
  const receipt = '# 42 MAIN ST\nMilk        1.99\nBread       2.49\n-- TOTAL    4.48';
  reply = () => sseBody([receipt]);
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
  reply = () => sseBody(['# Big\n\n## Smaller\n\n| Item | Price |\n|:-----|------:|\n| Milk | 1.99 |\n\n',
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

test('maths is typeset by KaTeX and code coloured, from a bundle loaded only then', async () => {
  assert.equal(log.requests.some((u) => u.includes('/assets/rich.')), false, 'not part of the first load');
  reply = () => sseBody(['Euler: \\(e^{i\\pi} + 1 = 0\\), and it costs $5 or $10.\n\n$$\n\\int_0^1 x^2\\,dx = \\frac{1}{3}\n$$\n\n',
    '```python\ndef f(x):\n    return "hi"  # greet\n```\n']);
  await ask('Maths and code');
  const answer = lastAnswer();
  await answer.locator('.math-inline .katex').waitFor();
  await answer.locator('.math-display .katex-display').waitFor();
  await answer.locator('code.hljs .hljs-keyword').first().waitFor();
  assert.match(await answer.locator('.markdown p').first().textContent(), /costs \$5 or \$10/, 'prices are not maths');
  assert.equal(await answer.locator('.hljs-string').first().textContent(), '"hi"');
  // KaTeX's fonts come from the server.
  await page.waitForFunction(() => document.fonts.check('16px KaTeX_Main'));
  assert.ok(log.requests.some((u) => /\/assets\/KaTeX_Main-Regular\.\w+\.woff2$/.test(u)));
  assert.deepEqual(await axeViolations(page), []);
  await page.screenshot({ path: screenshotPath('desktop-light-maths-code') });
});

test('grounding on several images: a choice and a hint, object list, labels, downloads, lightbox', async () => {
  await newChat();
  await pasteImages(page, [{ name: 'left.png', width: 200, height: 100, colour: '#446688' },
    { name: 'right.png', width: 100, height: 200, colour: '#884466' }]);
  await ready(2);
  reply = () => sseBody(['```json\n[{"bbox_2d": [100, 100, 500, 500], "label": "thing"}, {"point_2d": [700, 800], "label": "dot"}]\n```']);
  await preset('Find objects').click();
  await question().fill('things');
  await question().press('Enter');
  await page.locator('.grounding .box').first().waitFor();
  assert.match(await page.locator('.ground-hint').textContent(), /2 images.*does not say which/);
  assert.equal(await page.locator('.grounding-frame img').getAttribute('alt'), 'right.png with the objects found');
  await page.getByRole('button', { name: '1. left.png' }).click();
  await page.locator('.grounding-frame img[alt^="left.png"]').waitFor();
  assert.equal(await page.getByRole('button', { name: '1. left.png' }).getAttribute('aria-pressed'), 'true');
  // Pixel coordinates of the 200x100 image; a point is drawn as a dot.
  assert.match(await page.locator('.object').first().textContent(), /thing \(20, 10\)–\(100, 50\) px/);
  assert.equal(await page.locator('.box.point').count(), 1);
  await page.locator('.object').first().hover();
  assert.equal(await page.locator('.box.highlight').count(), 1);
  await page.locator('.object').first().click();
  assert.equal(await page.locator('.box[data-box="0"]').isHidden(), true);
  await page.locator('.object').first().click();
  await page.getByRole('button', { name: 'Labels' }).click();
  assert.equal(await page.locator('.box-label').first().isVisible(), false);
  await page.getByRole('button', { name: 'Labels' }).click();
  const json = page.waitForEvent('download');
  await page.getByRole('button', { name: 'Download boxes (JSON)' }).click();
  const boxes = JSON.parse(readFileSync(await (await json).path(), 'utf8'));
  assert.deepEqual(boxes.objects[0], { label: 'thing', bbox_2d: [100, 100, 500, 500], bbox_px: [20, 10, 100, 50] });
  assert.deepEqual(boxes.objects[1].point_px, [140, 80]);
  const png = page.waitForEvent('download');
  await page.getByRole('button', { name: 'Download image with boxes (PNG)' }).click();
  assert.equal(readFileSync(await (await png).path()).subarray(1, 4).toString(), 'PNG');
  await page.setViewportSize({ width: 1400, height: 860 });
  await page.screenshot({ path: screenshotPath('desktop-light-grounding-workspace') });
  await page.locator('.grounding-frame').click();
  await page.locator('#lightbox .box').first().waitFor();
  assert.deepEqual(await axeViolations(page), []);
  await page.screenshot({ path: screenshotPath('desktop-light-lightbox') });
  await page.keyboard.press('Escape');
  await page.locator('.message.user .zoom-button').first().click();
  await page.locator('#lightbox img').waitFor();
  await page.getByRole('button', { name: 'Close the enlarged image' }).click();
  await page.setViewportSize({ width: 1280, height: 800 });
  await preset('Ask').click();
});

test('contrast: box label colours and form-field borders meet WCAG', async () => {
  const ratios = await page.evaluate(async () => {
    const lum = (rgb) => {
      const [r, g, b] = rgb.match(/\d+/g).slice(0, 3).map((v) => { const c = Number(v) / 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; });
      return 0.2126 * r + 0.7152 * g + 0.0722 * b;
    };
    const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
    const labels = [...document.querySelectorAll('.box-label')].map((e) => ratio(getComputedStyle(e).backgroundColor, getComputedStyle(e).color));
    const field = document.getElementById('prompt').closest('.input-row');
    const border = ratio(getComputedStyle(field).borderTopColor, getComputedStyle(document.body).backgroundColor);
    return { labels, border };
  });
  assert.ok(ratios.border >= 3, `field border ${ratios.border.toFixed(2)}:1`);
  assert.ok(ratios.labels.length >= 1);
  for (const r of ratios.labels) assert.ok(r >= 4.5, `label ${r.toFixed(2)}:1`);
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

test('context meter; export as JSON (with images) and Markdown, import restores the conversation', async () => {
  await page.locator('.conversation-open').filter({ hasText: 'Find objects: things' }).click();
  await page.locator('.grounding').waitFor();
  // The canned usage: 90 prompt tokens and one answer token.
  assert.equal(await page.locator('#context-meter').getAttribute('data-used'), '91');
  assert.match(await page.locator('#context-meter').textContent(), /91 of 262,144 tokens/);
  const json = page.waitForEvent('download');
  await page.getByRole('button', { name: 'Export JSON' }).click();
  const file = await (await json).path();
  const data = JSON.parse(readFileSync(file, 'utf8'));
  assert.equal(data.format, 'qvl-conversation');
  assert.equal(data.images.length, 2);
  assert.match(data.images[0].dataUrl, /^data:image\/png;base64,/);
  const md = page.waitForEvent('download');
  await page.getByRole('button', { name: 'Export Markdown' }).click();
  const markdown = readFileSync(await (await md).path(), 'utf8');
  assert.match(markdown, /^# Find objects: things\n/);
  assert.match(markdown, /\[image: left\.png\] \[image: right\.png\]/);
  const count = await page.locator('.conversation').count();
  await page.locator('#import-input').setInputFiles({ name: 'export.json', mimeType: 'application/json', buffer: readFileSync(file) });
  await page.getByText('Imported “Find objects: things”.').waitFor();
  assert.equal(await page.locator('.conversation').count(), count + 1);
  assert.equal(await page.locator('.message.user .message-image').count(), 2);
  await page.locator('.grounding .box').first().waitFor();
  await page.locator('#import-input').setInputFiles({ name: 'junk.json', mimeType: 'application/json', buffer: Buffer.from('{"a":1}') });
  await page.getByText(/Could not import junk\.json: the file is not a qvl conversation export/).waitFor();
});

test('sidebar: date groups, search, rename; theme override in settings', async () => {
  assert.deepEqual(await page.locator('.group-title').allTextContents(), ['Today']);
  await page.getByRole('searchbox', { name: 'Search conversations' }).fill('image 0');
  await page.waitForFunction(() => document.querySelectorAll('.conversation').length === 1);
  assert.equal(await page.locator('.conversation-title').textContent(), 'Image 0?');
  await page.getByRole('searchbox', { name: 'Search conversations' }).fill('no such words');
  await page.getByText('No conversation matches.').waitFor();
  await page.getByRole('searchbox', { name: 'Search conversations' }).fill('');
  const item = page.locator('.conversation').filter({ hasText: 'Image 0?' });
  await item.hover();
  await item.getByRole('button', { name: 'Rename conversation “Image 0?”' }).click();
  await page.getByLabel('Conversation title').fill('Four colours');
  await page.getByLabel('Conversation title').press('Enter');
  await page.locator('.conversation-title', { hasText: 'Four colours' }).waitFor();
  assert.equal(await page.evaluate(() => document.activeElement.getAttribute('aria-label')), 'Rename conversation “Four colours”');
  await page.reload();
  await page.locator('.conversation-title', { hasText: 'Four colours' }).waitFor();

  const background = () => page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  assert.equal(await background(), 'rgb(255, 255, 255)');
  await page.getByRole('button', { name: 'Settings' }).click();
  await page.getByLabel('Theme').selectOption('dark');
  await page.getByRole('button', { name: 'Save' }).click();
  assert.equal(await background(), 'rgb(23, 24, 27)', 'dark although the system is light');
  assert.deepEqual(await axeViolations(page), []);
  await page.screenshot({ path: screenshotPath('desktop-dark-theme-override') });
  await page.getByRole('button', { name: 'Settings' }).click();
  await page.getByLabel('Theme').selectOption('');
  await page.getByRole('button', { name: 'Save' }).click();
  assert.equal(await background(), 'rgb(255, 255, 255)');
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
  assert.deepEqual(await axeViolations(page), []);
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
