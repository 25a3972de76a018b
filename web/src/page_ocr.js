// Reading a document page by page: one OCR request per chosen page (the file part with
// pages: "N"), answered in order, each page's thumbnail beside its text as it streams; the
// whole document's text downloads as text, Markdown or JSON ([{page, text}]).
//   answer: { role: 'assistant', kind: 'pages', document: id, pages: [{ page, text, state }] }
import { ApiFailure, streamChat } from './api.js';
import { chosenPages, mediaPart } from './media.js';
import { fillAssistant } from './view.js';
import { OCR_PROMPT } from './presets.js';

// The request reading page `page` of `record`.
export function pageRequest(record, page, settings, props) {
  const body = { model: (props && props.model) || 'qvl', temperature: 0,
    messages: [{ role: 'user', content: [mediaPart(record, String(page)), { type: 'text', text: OCR_PROMPT }] }] };
  const max = Number(settings.max_tokens);
  if (settings.max_tokens !== '' && settings.max_tokens !== undefined && Number.isFinite(max)) body.max_tokens = max;
  return body;
}

// Reads the pages of `answer` in order; `onUpdate()` after every piece. Stops at the first
// failure (the error is thrown) or when `signal` aborts.
export async function readPages(answer, record, { settings, props, signal, onUpdate }) {
  for (const entry of answer.pages) {
    if (entry.state === 'done') continue;
    entry.state = 'streaming';
    entry.text = '';
    onUpdate();
    try {
      await streamChat(pageRequest(record, entry.page, settings, props), {
        apiKey: settings.apiKey,
        signal,
        onDelta: (text) => { entry.text += text; onUpdate(); },
      });
      entry.state = 'done';
    } catch (error) {
      entry.state = error.name === 'AbortError' ? 'stopped' : 'error';
      throw error;
    } finally {
      onUpdate();
    }
  }
}

// Reads `record` page by page into a new answer of the current conversation. `app`: the page's
// state and renderers (main.js).
export async function answerPages(record, app) {
  const { state, ui } = app;
  const conversation = state.current;
  const answer = { role: 'assistant', kind: 'pages', preset: 'ocr', document: record.id, text: '', state: 'streaming',
    pages: chosenPages(record).map((page) => ({ page, text: '', state: 'waiting' })) };
  conversation.messages.push(answer);
  const controller = new AbortController();
  state.controller = controller;
  app.hideError();
  app.renderConversation();
  app.renderComposer();
  app.scrollToEnd();
  let frame = 0;
  const paint = () => {
    frame = 0;
    if (state.current !== conversation) return;
    const stick = app.nearBottom();
    fillAssistant(ui.messageList.lastElementChild, conversation.messages, conversation.messages.indexOf(answer), true, true);
    if (stick) app.scrollToEnd();
  };
  try {
    await readPages(answer, record, { settings: state.settings, props: state.props, signal: controller.signal,
      onUpdate: () => { if (!frame) frame = requestAnimationFrame(paint); } });
    answer.state = 'done';
  } catch (error) {
    answer.state = error.name === 'AbortError' ? 'stopped' : 'error';
    if (error.name !== 'AbortError') app.showFailure(error instanceof ApiFailure ? error : new ApiFailure('stream', error.message));
  } finally {
    cancelAnimationFrame(frame);
    answer.text = pagesText(answer);  // what follow-up questions, Copy and exports see
    state.controller = null;
    conversation.updated = Date.now();
    app.persist();
    if (state.current === conversation) {
      app.renderConversation();
      app.renderComposer();
    }
  }
}

export const pagesText = (answer) => answer.pages.map((p) => `--- Page ${p.page} ---\n${p.text}`).join('\n\n');
export const pagesMarkdown = (answer, name) =>
  [`# ${name || 'Document'}`, '', ...answer.pages.flatMap((p) => [`## Page ${p.page}`, '', p.text, ''])].join('\n');
export const pagesJson = (answer) => JSON.stringify(answer.pages.map((p) => ({ page: p.page, text: p.text })), null, 1);
