// Shared set-up of the workspace browser tests: a real `qvl serve` (tiny model, at most 3
// images per request) for everything but the chat endpoint, whose answers are canned
// (page.route, `W.reply`), and helpers to ask, attach and replay a request against the server.
import { startServer } from '../server/helpers.mjs';
import { launchBrowser, openPage, sseBody } from './browser.mjs';

// W.page, W.log, W.server; W.reply() gives the next answer; W.bodies the requests sent.
export const W = { reply: () => sseBody(['Hello']), bodies: [] };

export async function startWorkspace() {
  W.server = await startServer(['--max-images', '3']);
  W.browser = await launchBrowser();
  ({ page: W.page, log: W.log } = await openPage(W.browser, W.server.url, { bypassCSP: true }));
  W.page.setDefaultTimeout(20000);
  await W.page.route('**/v1/chat/completions', async (route) => {
    W.bodies.push(JSON.parse(route.request().postData()));
    const answer = W.reply();
    if (typeof answer === 'string') {
      await route.fulfill({ status: 200, headers: { 'content-type': 'text/event-stream' }, body: answer });
    } else {
      await answer(route);
    }
  });
  await W.page.goto('/');
  await W.page.locator('#model-status[data-state="ready"]').waitFor();
  return W;
}

export async function stopWorkspace() {
  await W.browser?.close();
  await W.server?.stop();
}


export const question = () => W.page.getByRole('textbox', { name: 'Question' });
export const preset = (name) => W.page.locator('#presets').getByText(name, { exact: true });
export const lastAnswer = () => W.page.locator('.message.assistant').last();
export const ready = (n) => W.page.waitForFunction((count) => document.querySelectorAll('.attachment.ready').length === count
  && !document.querySelector('.attachment.pending'), n).catch(async (error) => {
  throw new Error(`${error.message}; attachments: ${await W.page.locator('.attachment').count()}, notice: ${await W.page.locator('#notice').textContent()}`);
});
export const sentImages = (body) => body.messages.flatMap((m) => (Array.isArray(m.content) ? m.content : [])).filter((p) => p.type === 'image_url');
export async function newChat() {
  await W.page.getByRole('button', { name: 'New chat', exact: true }).click();
  await W.page.locator('.message').first().waitFor({ state: 'detached' });
}
export async function ask(text) {
  const before = await W.page.locator('.message.assistant:not(.streaming)').count();
  await question().fill(text);
  await question().press('Enter');
  await W.page.waitForFunction((n) => document.querySelectorAll('.message.assistant:not(.streaming)').length > n, before);
}
// The request the page sent, replayed against the real server (not streamed, one token).
export async function replay(body) {
  const res = await fetch(`${W.server.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ ...body, stream: false, stream_options: undefined, max_tokens: 1 }),
  });
  return { status: res.status, json: await res.json() };
}
