// The page with a Thinking model (the tiny model with the Qwen3-VL-*-Thinking chat template): the
// reasoning streams into a collapsible "Thought for N s" block above the answer, open while the
// model thinks and closed once the answer is there; earlier reasoning is not sent back.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { MODEL_DIR, startServer } from '../server/helpers.mjs';
import { makeThinkingModel } from '../server/thinking_model.mjs';
import { axeViolations, launchBrowser, openPage, screenshotPath } from './browser.mjs';

let server;
let browser;
let page;
let canned = null;  // the next chat answer as SSE text, or null for the real server's
const bodies = [];

function thinkingSse(reasoning, content) {
  const chunk = (delta, finish = null) => ({
    id: 'chatcmpl-t', object: 'chat.completion.chunk', created: 1, model: 'tiny',
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
  const events = [chunk({ role: 'assistant', content: '' }),
    ...reasoning.map((r) => chunk({ reasoning_content: r })),
    ...content.map((c) => chunk({ content: c })), chunk({}, 'stop')];
  return events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join('') + 'data: [DONE]\n\n';
}

before(async () => {
  server = await startServer([], { modelDir: makeThinkingModel(MODEL_DIR) });
  browser = await launchBrowser();
  ({ page } = await openPage(browser, server.url, { bypassCSP: true }));
  page.setDefaultTimeout(20000);
  await page.route('**/v1/chat/completions', async (route) => {
    bodies.push(JSON.parse(route.request().postData()));
    if (canned === null) return route.continue();
    const body = canned;
    canned = null;
    return route.fulfill({ status: 200, headers: { 'content-type': 'text/event-stream' }, body });
  });
  await page.goto('/');
  await page.locator('#model-status[data-state="ready"]').waitFor();
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

async function ask(text) {
  const before = await page.locator('.message.assistant:not(.streaming)').count();
  await page.getByRole('textbox', { name: 'Question' }).fill(text);
  await page.getByRole('textbox', { name: 'Question' }).press('Enter');
  await page.waitForFunction((n) => document.querySelectorAll('.message.assistant:not(.streaming)').length > n, before);
  return page.locator('.message.assistant').last();
}

test('the header names the Thinking variant', async () => {
  assert.match(await page.locator('#model-status-text').textContent(), / · Thinking · \d+k context$/);
});

test('the real server\'s reasoning streams into the block (cut by max tokens: no answer yet)', async () => {
  await page.getByRole('button', { name: 'Settings' }).click();
  await page.getByLabel('Max tokens', { exact: true }).fill('6');
  // Greedy, the tiny model writes only newlines (no reasoning text to show).
  await page.getByLabel('Temperature', { exact: true }).fill('1');
  await page.getByLabel('Seed', { exact: true }).fill('7');
  await page.getByRole('button', { name: 'Save' }).click();
  await page.locator('#settings').waitFor({ state: 'hidden' });
  const answer = await ask('Why is the sky blue?');
  const block = answer.locator('details.reasoning');
  await block.waitFor();
  const reasoning = await block.locator('.reasoning-text').textContent();
  assert.ok(reasoning.length > 0, 'the random model\'s tokens are reasoning');
  assert.match(await block.locator('summary').textContent(), /^Thought for \d+(\.\d)? s$/);
  assert.equal(await answer.locator('.waiting').count(), 0);
  assert.match(await answer.locator('.state-note').textContent(), /max tokens/);
  // Replayed against the server without the split, the text is the same reasoning.
  const res = await fetch(`${server.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ ...bodies.at(-1), stream: false, stream_options: undefined, reasoning_format: 'none' }),
  });
  assert.equal((await res.json()).choices[0].message.content.trim(), reasoning);
});

test('reasoning then answer: the block closes, says how long, opens on click', async () => {
  canned = thinkingSse(['The user asks ', 'about the sky.\n', 'Rayleigh.'], ['It is **Rayleigh** ', 'scattering.']);
  const answer = await ask('And why red at sunset?');
  const block = answer.locator('details.reasoning');
  assert.match(await block.locator('summary').textContent(), /^Thought for \d+(\.\d)? s$/);
  assert.equal(await block.evaluate((d) => d.open), false, 'closed once the answer is there');
  assert.equal(await answer.locator('.markdown strong').textContent(), 'Rayleigh');
  assert.equal(await block.locator('.reasoning-text').isVisible(), false);
  await block.locator('summary').click();
  assert.equal(await block.locator('.reasoning-text').textContent(), 'The user asks about the sky.\nRayleigh.');
  assert.deepEqual(await axeViolations(page, { scope: '.message.assistant' }), []);
  await page.screenshot({ path: screenshotPath('thinking-answer') });
  // The next question sends the earlier answers' content only.
  canned = thinkingSse(['ok'], ['Yes.']);
  await ask('Thanks');
  const sent = bodies.at(-1).messages.filter((m) => m.role === 'assistant');
  assert.ok(sent.length >= 1);
  for (const m of sent) assert.ok(!('reasoning_content' in m), JSON.stringify(m));
  assert.equal(sent.at(-1).content, 'It is **Rayleigh** scattering.');
});

test('the blocks survive a reload with their durations, open only where the reader opened one', async () => {
  await page.reload();
  await page.locator('#model-status[data-state="ready"]').waitFor();
  const blocks = page.locator('.message.assistant details.reasoning');
  await blocks.nth(2).waitFor();
  for (let i = 0; i < 3; i++) assert.match(await blocks.nth(i).locator('summary').textContent(), /^Thought for /);
  assert.deepEqual(await blocks.evaluateAll((all) => all.map((d) => d.open)), [false, true, false]);
});

test('the Markdown export quotes the reasoning before each answer', async () => {
  const download = page.waitForEvent('download');
  await page.getByRole('button', { name: 'Export Markdown' }).click();
  const text = readFileSync(await (await download).path(), 'utf8');
  assert.ok(text.includes('*Thoughts:*\n\n> The user asks about the sky.\n> Rayleigh.\n\nIt is **Rayleigh** scattering.'), text);
});
