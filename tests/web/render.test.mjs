// The page with canned answers (page.route replies with a synthetic SSE stream): grounding
// boxes, safe Markdown, error banners, edit/regenerate/copy/clear, keyboard, headers, and
// screenshots at desktop and phone width in light and dark.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { MODEL_DIR, startServer } from '../server/helpers.mjs';
import { foreignRequests, launchBrowser, openPage, screenshotPath, sseBody } from './browser.mjs';

const SCENE = path.join(MODEL_DIR, 'images', 'a_iii_scene_640x480.jpg');
let server;
let browser;
let page;
let log;
let reply = () => sseBody(['Hello']);
const bodies = [];

const GROUNDING = ['Here they are:\n```json\n[\n  {"bbox_2d": [100, 200, 500, 800], "label": "cat"},\n',
  '  {"bbox_2d": [600, 100, 900, 400], "label": "dog"},\n  {"bbox_2d": [650, 500, 950, 950], "label": "cat"}\n]\n```'];

before(async () => {
  server = await startServer();
  browser = await launchBrowser();
  ({ page, log } = await openPage(browser, server.url));
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

test('the page is served with a strict CSP, right types and caching', async () => {
  const res = await fetch(`${server.url}/`);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-type'), 'text/html; charset=utf-8');
  const csp = res.headers.get('content-security-policy');
  assert.match(csp, /default-src 'self'/);
  assert.match(csp, /script-src 'self';/);
  assert.match(csp, /img-src 'self' data: blob:/);
  assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
  assert.equal(res.headers.get('cache-control'), 'no-cache');
  assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
  const html = await res.text();
  assert.doesNotMatch(html, /<script>|<script [^>]*>[^<]/, 'no inline script');
  const script = /src="(\/assets\/app\.[0-9a-f]+\.js)"/.exec(html)[1];
  const js = await fetch(`${server.url}${script}`);
  assert.equal(js.headers.get('content-type'), 'text/javascript; charset=utf-8');
  assert.match(js.headers.get('cache-control'), /immutable/);
  const again = await fetch(`${server.url}/`, { headers: { 'If-None-Match': res.headers.get('etag') } });
  assert.equal(again.status, 304);
  const props = await (await fetch(`${server.url}/props`)).json();
  assert.equal(typeof props.context_length, 'number');
  assert.equal(typeof props.default_sampling.temperature, 'number');
  assert.equal(typeof props.image.high_detail_max_tokens, 'number');
  assert.match(props.runtime.weights, /^(exact|bf16|q8|q4)$/, 'the weight type, for the page\'s monitor');
  assert.ok(Number.isInteger(props.runtime.threads) && props.runtime.threads > 0);
});

test('Shift+Enter is a new line, Enter sends; settings placeholders come from the server', async () => {
  await question().fill('line one');
  await question().press('Shift+Enter');
  await question().type('line two');
  assert.equal(await question().inputValue(), 'line one\nline two');
  await question().press('Enter');
  await page.locator('.message.assistant.done').waitFor();
  assert.equal(bodies.at(-1).messages.at(-1).content, 'line one\nline two');
  assert.equal(await question().inputValue(), '');
  assert.match(await lastAnswer().locator('.stats').textContent(), /First token\s*42 ms.*123\.4 tok\/s.*Images\s*77 tok/s);

  const props = await (await fetch(`${server.url}/props`)).json();
  await page.getByRole('button', { name: 'Settings' }).click();
  assert.match(await page.getByLabel('Max tokens', { exact: true }).getAttribute('placeholder'), new RegExp(`^${props.default_sampling.max_tokens} \\(default\\)`));
  assert.match(await page.getByLabel(/Image detail/).textContent(), new RegExp(`up to ${props.image.high_detail_max_tokens} tokens`));
  await page.getByLabel(/Image detail/).selectOption('high');
  await page.getByRole('button', { name: 'Save' }).click();
});

// A tile shows at once, pending, while the image is read and resized; Enter does not send until
// it is ready (on a loaded machine that takes seconds, and a press before it was lost).
const attachmentReady = () => page.locator('.attachment:not([aria-busy="true"])').waitFor();

test('Find objects draws labelled boxes from a grounding answer', async () => {
  reply = () => sseBody(GROUNDING);
  await page.getByRole('button', { name: 'New chat', exact: true }).click();
  await page.locator('#file-input').setInputFiles(SCENE);
  await attachmentReady();
  await preset('Find objects').click();
  await question().fill('cats and dogs');
  await question().press('Enter');
  await page.locator('.message.assistant.done').waitFor();
  const sent = bodies.at(-1).messages.at(-1).content;
  assert.equal(sent[0].image_url.detail, 'high');
  assert.match(sent[1].text, /cats and dogs.*bbox_2d.*0 to 1000/s);
  assert.equal(bodies.at(-1).temperature, 0);
  const boxes = page.locator('.grounding .box');
  assert.equal(await boxes.count(), 3);
  assert.deepEqual(await boxes.allTextContents(), ['cat', 'dog', 'cat']);
  const first = await boxes.first().evaluate((el) => [el.style.left, el.style.top, el.style.width, el.style.height]);
  assert.deepEqual(first, ['10%', '20%', '40%', '60%']);
  // Drawn over the picture, at the right place in pixels.
  const frame = await page.locator('.grounding-frame img').boundingBox();
  const box = await boxes.nth(1).boundingBox();
  assert.ok(Math.abs(box.x - (frame.x + 0.6 * frame.width)) < 3);
  assert.ok(Math.abs(box.width - 0.3 * frame.width) < 3);
  assert.match(await page.locator('.grounding figcaption').textContent(), /Found 3 objects: cat ×2, dog/);
  await preset('Ask').click();
});

test('model output cannot inject HTML or script; code blocks render with a copy button', async () => {
  reply = () => sseBody(['# Title\n\n<script>window.pwned = 1</script>\n<img src=x onerror="window.pwned = 2">\n',
    '[click](javascript:window.pwned=3) and ![remote](http://198.51.100.1/x.png)\n\n',
    '```python\nprint("<b>hi</b>")\n```\n\n\\[x^2 + \\sqrt{2}\\]\n']);
  await question().fill('Show me code');
  await question().press('Enter');
  await page.locator('.message.assistant.done').last().waitFor();
  const md = lastAnswer().locator('.markdown');
  assert.equal(await md.locator('script, img, [onerror]').count(), 0);
  assert.equal(await md.locator('h3').textContent(), 'Title', 'model headings sit below the page\'s');
  assert.match(await md.textContent(), /<script>window\.pwned = 1<\/script>/, 'shown as text');
  assert.equal(await md.locator('a[href^="javascript"]').count(), 0);
  assert.equal(await md.locator('code.language-python').textContent(), 'print("<b>hi</b>")\n');
  // Under the page's strict CSP: KaTeX typesets (no inline style markup), code is coloured.
  await md.locator('.math-display .katex-display').waitFor();
  await md.locator('code.hljs').waitFor();
  assert.equal(await page.evaluate(() => window.pwned), undefined);
  await md.getByRole('button', { name: 'Copy code' }).click();
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), 'print("<b>hi</b>")\n');
  await lastAnswer().getByRole('button', { name: 'Copy', exact: true }).click();
  assert.match(await page.evaluate(() => navigator.clipboard.readText()), /^# Title/);
});

test('regenerate and edit-and-resend replace the last answer', async () => {
  reply = () => sseBody(['Second try']);
  const before = bodies.length;
  await lastAnswer().getByRole('button', { name: 'Regenerate' }).click();
  await page.locator('.message.assistant.done', { hasText: 'Second try' }).waitFor();
  assert.equal(bodies.length, before + 1);
  assert.equal(bodies.at(-1).messages.at(-1).content, 'Show me code');
  const answers = await page.locator('.message.assistant').count();

  reply = () => sseBody(['Edited answer']);
  await page.locator('.message.user').last().getByRole('button', { name: 'Edit' }).click();
  await page.getByLabel('Edit your question').fill('Show me less code');
  await page.getByLabel('Edit your question').press('Enter');
  await page.locator('.message.assistant.done', { hasText: 'Edited answer' }).waitFor();
  assert.equal(bodies.at(-1).messages.at(-1).content, 'Show me less code');
  assert.equal(await page.locator('.message.assistant').count(), answers);
  assert.equal(await page.locator('.message.user .user-text').last().textContent(), 'Show me less code');
});

test('a 400 is not retried; connection loss and 429 are, a 429 once by itself', async () => {
  reply = () => (route) => route.fulfill({ status: 400, contentType: 'application/json',
    body: JSON.stringify({ error: { message: "'max_tokens' must be between 1 and 4096", type: 'invalid_request_error', param: 'max_tokens', code: null } }) });
  await question().fill('Break it');
  await question().press('Enter');
  const banner = page.getByRole('alert');
  await banner.waitFor();
  assert.match(await banner.textContent(), /refused the request \(400\): 'max_tokens' must be between 1 and 4096/);
  assert.equal(await banner.getByRole('button', { name: 'Retry' }).isVisible(), false);
  assert.equal(await question().inputValue(), 'Break it', 'the question is back in the box');
  await page.locator('.message.user.failed', { hasText: 'Break it' }).waitFor();

  reply = () => (route) => route.abort('connectionreset');
  await question().press('Enter');
  await page.getByRole('alert').filter({ hasText: 'Connection lost' }).waitFor();

  const before = bodies.length;
  reply = () => (route) => route.fulfill({ status: 429, headers: { 'Retry-After': '1', 'content-type': 'application/json' },
    body: JSON.stringify({ error: { message: 'busy', type: 'rate_limit_error', code: 'rate_limit_exceeded' } }) });
  await banner.getByRole('button', { name: 'Retry' }).click();
  // First 429: a countdown, then one retry by itself; the second 429 waits for the user.
  await page.getByRole('alert').filter({ hasText: 'Try again in 1 s' }).waitFor();
  assert.equal(bodies.length, before + 2);

  reply = () => sseBody(['Recovered']);
  await banner.getByRole('button', { name: 'Retry' }).click();
  await page.locator('.message.assistant.done', { hasText: 'Recovered' }).waitFor();
  assert.equal(await banner.isVisible(), false);
  assert.equal(await page.locator('.message.user', { hasText: 'Break it' }).count(), 2, 'the refused one and the answered one');
  assert.equal(bodies.at(-1).messages.filter((m) => m.content === 'Break it').length, 1, 'the refused turn is not sent');
});

test('pasting an image attaches it', async () => {
  // An image this conversation has not seen (a known one would keep its first name).
  const b64 = readFileSync(path.join(MODEL_DIR, 'images', 'a_iv_checker_400x336.png')).toString('base64');
  await question().focus();
  await page.evaluate((data) => {
    const bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
    const transfer = new DataTransfer();
    transfer.items.add(new File([bytes], 'screenshot.png', { type: 'image/png' }));
    document.getElementById('prompt').dispatchEvent(new ClipboardEvent('paste', { clipboardData: transfer, bubbles: true, cancelable: true }));
  }, b64);
  await page.getByRole('button', { name: 'Remove screenshot.png' }).click();
  assert.equal(await page.locator('.attachment').count(), 0);
});

test('clear empties the conversation', async () => {
  await page.getByRole('button', { name: 'Clear this conversation' }).click();
  await page.locator('#empty-state').waitFor();
  assert.equal(await page.locator('.message').count(), 0);
});

test('screenshots at desktop and phone width, light and dark, all focusable controls labelled', async () => {
  reply = () => sseBody(GROUNDING);
  await page.locator('#file-input').setInputFiles(SCENE);
  await attachmentReady();
  await preset('Find objects').click();
  await question().fill('cats and dogs');
  await question().press('Enter');
  await page.locator('.grounding .box').first().waitFor();
  reply = () => sseBody(['The picture shows **three animals**:\n\n1. a cat on the left\n2. a dog at the top right\n3. another cat below it\n\n',
    'As JSON:\n```json\n{"cats": 2, "dogs": 1}\n```\n']);
  await preset('Ask').click();
  await question().fill('Summarise what you found.');
  await question().press('Enter');
  await page.locator('.message.assistant.done').nth(1).waitFor();

  const unlabelled = await page.evaluate(() => [...document.querySelectorAll('button, input:not([type=file]), textarea, select, a[href]')]
    .filter((el) => el.offsetParent !== null || el.closest('dialog'))
    .filter((el) => !(el.getAttribute('aria-label') || el.textContent.trim() || (el.labels && el.labels.length) || el.title))
    .map((el) => el.outerHTML.slice(0, 80)));
  assert.deepEqual(unlabelled, []);

  await page.locator('.grounding').first().screenshot({ path: screenshotPath('desktop-light-boxes') });
  for (const scheme of ['light', 'dark']) {
    await page.emulateMedia({ colorScheme: scheme });
    await page.setViewportSize({ width: 1280, height: 860 });
    await page.screenshot({ path: screenshotPath(`desktop-${scheme}`) });
    await page.setViewportSize({ width: 390, height: 844 });
    await page.screenshot({ path: screenshotPath(`phone-${scheme}`) });
  }
  // On a phone the conversation list is a drawer behind the menu button.
  assert.equal(await page.locator('#sidebar').isVisible(), false);
  await page.getByRole('button', { name: 'Show conversations' }).click();
  await page.locator('#sidebar').waitFor();
  await page.screenshot({ path: screenshotPath('phone-dark-conversations') });
  await page.keyboard.press('Escape');
  await page.emulateMedia({ colorScheme: 'light' });
  await page.getByRole('button', { name: 'Settings' }).click();
  await page.screenshot({ path: screenshotPath('phone-light-settings') });
  await page.keyboard.press('Escape');
});

test('no request leaves the server origin and the page logs no errors', async () => {
  assert.deepEqual(foreignRequests(log, server.url), []);
  assert.deepEqual(log.errors.filter((e) => !/status of (400|429)|ERR_CONNECTION_RESET/.test(e)), []);
});
