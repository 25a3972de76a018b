// The workspace's features, against canned answers and a real `qvl serve` (see canned.mjs):
// Continue and answer versions, maths and code, the grounding workspace and lightbox, contrast
// of the box labels, context meter, export and import, search, rename and theme.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { axeViolations, foreignRequests, pasteImages, screenshotPath, sseBody } from './browser.mjs';
import { W, ask, lastAnswer, newChat, preset, question, ready, startWorkspace, stopWorkspace } from './canned.mjs';

let page;
let log;
let server;
const bodies = W.bodies;

before(async () => {
  await startWorkspace();
  ({ page, log, server } = W);
});

after(stopWorkspace);

test('Continue resumes an answer cut short; Regenerate keeps the old answer as a version', async () => {
  W.reply = () => sseBody(['Part one'], { finish: 'length' });
  await ask('Long story');
  await lastAnswer().getByText('Reached the max tokens limit.').waitFor();
  W.reply = () => sseBody([' and part two.']);
  await lastAnswer().getByRole('button', { name: 'Continue' }).click();
  await page.locator('.message.assistant.done', { hasText: 'Part one and part two.' }).waitFor();
  const sent = bodies.at(-1).messages.slice(-3);
  assert.deepEqual(sent.map((m) => m.role), ['user', 'assistant', 'user']);
  assert.equal(sent[1].content, 'Part one');
  assert.match(sent[2].content, /Continue your previous answer/);
  assert.equal(await page.locator('.message.assistant').filter({ hasText: 'Part one' }).count(), 1, 'one answer, continued in place');

  W.reply = () => sseBody(['Another take.']);
  await lastAnswer().getByRole('button', { name: 'Regenerate' }).click();
  await page.locator('.message.assistant.done', { hasText: 'Another take.' }).waitFor();
  assert.equal(await lastAnswer().locator('.version-count').textContent(), '2 / 2');
  await lastAnswer().getByRole('button', { name: 'Previous version' }).click();
  await page.locator('.message.assistant', { hasText: 'Part one and part two.' }).waitFor();
  assert.equal(await lastAnswer().locator('.version-count').textContent(), '1 / 2');
  await page.screenshot({ path: screenshotPath('desktop-light-versions') });
  // The next question carries the version on screen.
  W.reply = () => sseBody(['ok']);
  await ask('Thanks');
  assert.equal(bodies.at(-1).messages.at(-2).content, 'Part one and part two.');
});

test('maths is typeset by KaTeX and code coloured, from a bundle loaded only then', async () => {
  assert.equal(log.requests.some((u) => u.includes('/assets/rich.')), false, 'not part of the first load');
  W.reply = () => sseBody(['Euler: \\(e^{i\\pi} + 1 = 0\\), and it costs $5 or $10.\n\n$$\n\\int_0^1 x^2\\,dx = \\frac{1}{3}\n$$\n\n',
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
  W.reply = () => sseBody(['```json\n[{"bbox_2d": [100, 100, 500, 500], "label": "thing"}, {"point_2d": [700, 800], "label": "dot"}]\n```']);
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
  await page.getByRole('searchbox', { name: 'Search conversations' }).fill('long story');
  await page.waitForFunction(() => document.querySelectorAll('.conversation').length === 1);
  assert.equal(await page.locator('.conversation-title').textContent(), 'Long story');
  await page.getByRole('searchbox', { name: 'Search conversations' }).fill('no such words');
  await page.getByText('No conversation matches.').waitFor();
  await page.getByRole('searchbox', { name: 'Search conversations' }).fill('');
  const item = page.locator('.conversation').filter({ hasText: 'Long story' });
  await item.hover();
  await item.getByRole('button', { name: 'Rename conversation “Long story”' }).click();
  await page.getByLabel('Conversation title').fill('Renamed story');
  await page.getByLabel('Conversation title').press('Enter');
  await page.locator('.conversation-title', { hasText: 'Renamed story' }).waitFor();
  assert.equal(await page.evaluate(() => document.activeElement.getAttribute('aria-label')), 'Rename conversation “Renamed story”');
  await page.reload();
  await page.locator('.conversation-title', { hasText: 'Renamed story' }).waitFor();

  const background = () => page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  assert.equal(await background(), 'rgb(255, 255, 255)');
  await page.getByRole('button', { name: 'Settings' }).click();
  await page.getByLabel('Theme').selectOption('dark');
  await page.getByRole('button', { name: 'Save' }).click();
  assert.equal(await background(), 'rgb(23, 24, 27)', 'dark although the system is light');
  assert.deepEqual(await axeViolations(page, { rules: ['color-contrast'] }), []);
  await page.screenshot({ path: screenshotPath('desktop-dark-theme-override') });
  await page.getByRole('button', { name: 'Settings' }).click();
  await page.getByLabel('Theme').selectOption('');
  await page.getByRole('button', { name: 'Save' }).click();
  assert.equal(await background(), 'rgb(255, 255, 255)');
});

test('no request leaves the server origin and the page logs no errors', async () => {
  assert.deepEqual(foreignRequests(log, server.url), []);
  assert.deepEqual(log.errors, []);
});
