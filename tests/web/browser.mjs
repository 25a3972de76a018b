// Shared setup for the browser tests: Debian's Chromium through playwright-core (never a
// downloaded browser), a record of every request the page makes, and screenshot paths.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { chromium } from 'playwright-core';

// Usage: node <test>.mjs <qvl binary> <model dir> <artifacts dir>
export const ARTIFACTS = process.argv[4] || process.env.QVL_WEB_ARTIFACTS || 'artifacts/web';
mkdirSync(ARTIFACTS, { recursive: true });

export async function launchBrowser() {
  return chromium.launch({
    executablePath: process.env.QVL_CHROMIUM || '/usr/bin/chromium',
    headless: true,
    // Playwright gives every launch a fresh temporary profile.
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
      '--disable-dev-shm-usage'],
  });
}

// A page on `origin`; `log` collects every request URL, console error and page error.
export async function openPage(browser, origin, { width = 1280, height = 800, colorScheme = 'light' } = {}) {
  const context = await browser.newContext({ viewport: { width, height }, colorScheme, baseURL: origin, reducedMotion: 'reduce' });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin });
  const page = await context.newPage();
  const log = { requests: [], errors: [] };
  context.on('request', (request) => log.requests.push(request.url()));
  page.on('console', (message) => { if (message.type() === 'error') log.errors.push(message.text()); });
  page.on('pageerror', (error) => log.errors.push(String(error)));
  page.on('dialog', (dialog) => dialog.accept());
  return { context, page, log };
}

export const screenshotPath = (name) => path.join(ARTIFACTS, `${name}.png`);

// Every request must go to the server itself or stay inside the page (data:, blob:).
export function foreignRequests(log, origin) {
  return log.requests.filter((url) => !url.startsWith(`${origin}/`) && !/^(data|blob):/.test(url));
}

// A text/event-stream body like qvl's, for page.route to answer with.
export function sseBody(pieces, { timings = {}, usage = {} } = {}) {
  const chunk = (delta, finish = null) => ({
    id: 'chatcmpl-test', object: 'chat.completion.chunk', created: 1, model: 'tiny',
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
  const events = [chunk({ role: 'assistant', content: '' }), ...pieces.map((p) => chunk({ content: p })), chunk({}, 'stop'),
    { id: 'chatcmpl-test', object: 'chat.completion.chunk', created: 1, model: 'tiny', choices: [],
      usage: { prompt_tokens: 90, completion_tokens: pieces.length, total_tokens: 90 + pieces.length, ...usage },
      timings: { ttft_ms: 42, completion_tokens_per_second: 123.4, image_tokens: 77, prompt_tokens: 90, ...timings } }];
  return events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join('') + 'data: [DONE]\n\n';
}
