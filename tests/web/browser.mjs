// Shared setup for the browser tests: Debian's Chromium through playwright-core (never a
// downloaded browser), a record of every request the page makes, and screenshot paths.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
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
export async function openPage(browser, origin, { width = 1280, height = 800, colorScheme = 'light', bypassCSP = false } = {}) {
  const context = await browser.newContext({ viewport: { width, height }, colorScheme, baseURL: origin, reducedMotion: 'reduce', bypassCSP, acceptDownloads: true });
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
export function sseBody(pieces, { timings = {}, usage = {}, finish = 'stop' } = {}) {
  const chunk = (delta, finish = null) => ({
    id: 'chatcmpl-test', object: 'chat.completion.chunk', created: 1, model: 'tiny',
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
  const events = [chunk({ role: 'assistant', content: '' }), ...pieces.map((p) => chunk({ content: p })), chunk({}, finish),
    { id: 'chatcmpl-test', object: 'chat.completion.chunk', created: 1, model: 'tiny', choices: [],
      usage: { prompt_tokens: 90, completion_tokens: pieces.length, total_tokens: 90 + pieces.length, ...usage },
      timings: { ttft_ms: 42, completion_tokens_per_second: 123.4, image_tokens: 77, prompt_tokens: 90, ...timings } }];
  return events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join('') + 'data: [DONE]\n\n';
}

// Pastes images made in the page into the question box. Each spec is { name, width, height,
// colour, noise, type } (drawn on a canvas) or { name, text, type } (e.g. an SVG's source).
export async function pasteImages(page, specs) {
  await page.evaluate(async (list) => {
    const transfer = new DataTransfer();
    for (const spec of list) {
      let blob;
      if (spec.text !== undefined) {
        blob = new Blob([spec.text], { type: spec.type });
      } else {
        const canvas = new OffscreenCanvas(spec.width, spec.height);
        const ctx = canvas.getContext('2d');
        ctx.fillStyle = spec.colour || '#3366cc';
        ctx.fillRect(0, 0, spec.width, spec.height);
        if (spec.noise) {
          const data = ctx.getImageData(0, 0, spec.width, spec.height);
          for (let i = 0; i < data.data.length; i++) data.data[i] = (i * 2654435761) >>> 24;
          ctx.putImageData(data, 0, 0);
        }
        blob = await canvas.convertToBlob({ type: spec.type || 'image/png' });
      }
      transfer.items.add(new File([blob], spec.name, { type: spec.type || 'image/png' }));
    }
    document.getElementById('prompt').dispatchEvent(new ClipboardEvent('paste', { clipboardData: transfer, bubbles: true, cancelable: true }));
  }, specs);
}

// axe-core's serious and critical violations on the page as it is (needs bypassCSP).
// `scope`: a CSS selector to check only that part; `rules`: only these rules (e.g. after a
// theme change, 'color-contrast').
export async function axeViolations(page, { impacts = ['serious', 'critical'], scope = null, rules = null } = {}) {
  if (!(await page.evaluate(() => typeof window.axe !== 'undefined'))) {
    await page.addScriptTag({ path: createRequire(import.meta.url).resolve('axe-core/axe.min.js') });
  }
  const result = await page.evaluate(([selector, only]) => window.axe.run(selector ? { include: [[selector]] } : document,
    { resultTypes: ['violations'], ...(only ? { runOnly: { type: 'rule', values: only } } : {}) }), [scope, rules]);
  return result.violations.filter((v) => impacts.includes(v.impact))
    .map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).slice(0, 3).join(', ')}`);
}
