// The qvl page: state, sending and streaming, and the wiring of the composer, the conversation
// list, settings, the lightbox and the server monitor.
import { ApiFailure, fetchProps, streamChat } from './api.js';
import { addReasoning, endReasoning } from './reasoning.js';
import { buildRequest, contextPlan, newConversation, statsFrom, titleFor } from './chat.js';
import { PRESETS } from './presets.js';
import { getCachedImage, loadConversations, loadImages, loadSettings, pruneImages, putImage, saveConversations, saveSettings } from './store.js';
import { fillAssistant, refreshWaiting, renderMessages } from './view.js';
import { applyTheme, initSettings, openSettings } from './settings.js';
import { Attachments, renderAttachments } from './attachments.js';
import { startMonitor } from './monitor.js';
import { initLightbox } from './lightbox.js';
import { modelLine } from './model_line.js';
import { renderSidebar, setDrawer, undoToast } from './sidebar.js';
import { wireControls } from './controls.js';
import { addFiles as addFilesTo } from './add_files.js';
import { wireMediaTiles } from './media_tiles.js';
import { answerPages } from './page_ocr.js';

const $ = (id) => document.getElementById(id);
const ui = {
  list: $('conversation-list'), title: $('chat-title'), status: $('model-status'),
  statusText: $('model-status-text'), clear: $('clear-chat'), messages: $('messages'),
  messageList: $('message-list'), empty: $('empty-state'), banner: $('error-banner'),
  bannerText: $('error-text'), retry: $('error-retry'), composer: $('composer'),
  presets: $('presets'), attachments: $('attachments'), budget: $('image-budget'),
  notice: $('notice'), fileInput: $('file-input'), prompt: $('prompt'), send: $('send'),
  stop: $('stop'), dropOverlay: $('drop-overlay'), monitor: $('monitor'),
};

const state = {
  conversations: loadConversations(),
  current: null,
  settings: loadSettings(),
  props: null,
  attachments: new Attachments(),
  preset: 'ask',
  controller: null,
  editingIndex: -1,
  retryAction: null,
  countdown: 0,
  query: '',
  renaming: null,
};

// ---- persistence -------------------------------------------------------------------------
function persist() {
  const dropped = saveConversations(state.conversations);
  if (dropped) {
    const kept = new Set(loadConversations().map((c) => c.id));
    state.conversations = state.conversations.filter((c) => kept.has(c.id) || c === state.current);
    notice(`Browser storage is full: removed the ${dropped} oldest conversation(s).`);
  }
}

function usedImageIds() {
  const ids = new Set(state.attachments.entries.filter((e) => e.image).map((e) => e.image.id));
  for (const c of state.conversations) for (const m of c.messages) for (const id of m.images || []) ids.add(id);
  return ids;
}

// ---- rendering ---------------------------------------------------------------------------
const busy = () => state.controller !== null;

function drawSidebar() {
  renderSidebar(ui.list, state.conversations, state.current, { query: state.query, renaming: state.renaming });
}

function renderConversation() {
  const c = state.current;
  ui.title.textContent = c.title || 'New chat';
  document.title = c.title ? `${c.title} · qvl` : 'qvl';
  ui.empty.hidden = c.messages.length > 0;
  // What the next question would carry: images past the per-request limit are marked.
  const next = [...c.messages, { role: 'user', text: '', images: [] }];
  const { dropped } = contextPlan(next, next.length - 1, state.settings, state.props);
  const maxImages = state.props && state.props.image && state.props.image.max_images_per_request;
  renderMessages(ui.messageList, c.messages, { busy: busy(), editingIndex: state.editingIndex, dropped, maxImages });
  ui.clear.disabled = c.messages.length === 0 || busy();
  drawSidebar();
}

function renderComposer() {
  ui.send.hidden = busy();
  ui.stop.hidden = !busy();
  const entries = state.attachments.of(state.current.id);
  renderAttachments(ui.attachments, ui.budget, entries, state.props, state.settings.detail);
  const pending = state.attachments.hasPending(state.current.id);
  ui.send.disabled = pending;
  ui.send.title = pending ? 'Waiting for the images to be ready' : 'Send (Enter)';
  renderContextMeter();
  const preset = PRESETS.find((p) => p.id === state.preset);
  ui.prompt.placeholder = preset.placeholder;
  for (const input of ui.presets.querySelectorAll('input')) input.checked = input.value === state.preset;
}

// How full the model's context was at the conversation's last answer (the server's count of
// the prompt plus the answer), against the context length.
function renderContextMeter() {
  const last = [...state.current.messages].reverse().find((m) => m.role === 'assistant' && m.stats && m.stats.promptTokens);
  const length = state.props && state.props.context_length;
  const meter = $('context-meter');
  meter.hidden = !last || !length;
  if (meter.hidden) return;
  const used = last.stats.promptTokens + (last.stats.completionTokens || 0);
  $('context-bar').value = Math.min(1, used / length);
  $('context-text').textContent = `${used.toLocaleString('en')} of ${length.toLocaleString('en')} tokens`;
  meter.dataset.used = String(used);
}

const scrollToEnd = () => { ui.messages.scrollTop = ui.messages.scrollHeight; };
const nearBottom = () => ui.messages.scrollHeight - ui.messages.scrollTop - ui.messages.clientHeight < 80;

let noticeTimer = 0;
function notice(text) {
  ui.notice.textContent = text;
  clearTimeout(noticeTimer);
  noticeTimer = setTimeout(() => { ui.notice.textContent = ''; }, 8000);
}

// ---- errors ------------------------------------------------------------------------------
function showError(message, retry) {
  clearInterval(state.countdown);
  ui.bannerText.textContent = message;
  state.retryAction = retry || null;
  ui.retry.hidden = !retry;
  ui.banner.hidden = false;
}

function hideError() {
  clearInterval(state.countdown);
  ui.banner.hidden = true;
  state.retryAction = null;
}

// Worth sending again unchanged: busy, server trouble, connection loss. Other 4xx refuse the
// question itself (its image, its size, ...), and 401/403 need the key fixed first.
const retryable = (f) => f.kind !== 'http' || f.status === 429 || f.status >= 500 || f.status === 401 || f.status === 403 || f.status === 408;

function describeFailure(error) {
  if (error.kind === 'network') return `Connection lost: ${error.message}.`;
  if (error.status === 429) return 'The server is busy (every slot is in use and the queue is full).';
  if (error.status === 401) return 'The server needs an API key: enter it in Settings.';
  if (error.status === 503) return `The server is not ready: ${error.message}`;
  if (error.status) return `The server refused the request (${error.status}): ${error.message}`;
  return `The answer failed: ${error.message}`;
}

// A 429 retries by itself once, after the server's Retry-After, counting down.
function busyCountdown(failure, conversation) {
  let left = Math.min(30, Math.max(1, failure.retryAfter || 1));
  showError('', () => retryLast(conversation, false));
  const tick = () => {
    ui.bannerText.textContent = `${describeFailure(failure)} Retrying in ${left} s…`;
    if (left-- <= 0) {
      hideError();
      retryLast(conversation, false);
    }
  };
  tick();
  state.countdown = setInterval(tick, 1000);
}

// ---- model status ------------------------------------------------------------------------
let propsPending = false;
async function refreshProps() {
  propsPending = true;
  try {
    state.props = await fetchProps(state.settings.apiKey);
    ui.status.dataset.state = 'ready';
    const ctx = state.props.context_length ? ` · ${Math.round(state.props.context_length / 1024)}k context` : '';
    ui.statusText.textContent = `${state.props.model}${modelLine(state.props)}${state.props.reasoning ? ' · Thinking' : ''}${ctx}`;
    renderComposer();
  } catch (error) {
    state.props = null;
    const loading = error.status === 503;
    ui.status.dataset.state = loading ? 'loading' : 'error';
    ui.statusText.textContent = loading ? 'Loading the model…' : error.status === 401 ? 'API key needed (Settings)' : 'Server unreachable';
  } finally {
    propsPending = false;
  }
}

function onReachable(reachable) {
  if (reachable === 'error') {
    ui.status.dataset.state = 'error';
    ui.statusText.textContent = 'Server unreachable';
  } else if (reachable === 'loading') {
    ui.status.dataset.state = 'loading';
    ui.statusText.textContent = 'Loading the model…';
  } else if ((ui.status.dataset.state !== 'ready' || !state.props) && !propsPending) {
    refreshProps();
  }
}

// ---- conversations -----------------------------------------------------------------------
async function openConversation(conversation) {
  if (busy()) stopGenerating();
  state.current = conversation;
  state.editingIndex = -1;
  hideError();
  await loadImages(conversation.messages.flatMap((m) => m.images || []));
  renderConversation();
  renderComposer();
  scrollToEnd();
  closeSidebar(false);
}

function startNewConversation(focus = true) {
  const empty = state.conversations.find((c) => c.messages.length === 0);
  const c = empty || newConversation();
  if (!empty) state.conversations.push(c);
  openConversation(c);
  if (focus) ui.prompt.focus();
}

function deleteConversation(id) {
  const victim = state.conversations.find((c) => c.id === id);
  if (!victim) return;
  state.conversations = state.conversations.filter((c) => c !== victim);
  persist();
  const wasCurrent = state.current === victim;
  if (wasCurrent) {
    const next = [...state.conversations].sort((a, b) => b.updated - a.updated)[0];
    if (next) openConversation(next); else startNewConversation(false);
  } else {
    drawSidebar();
  }
  undoToast(`Deleted “${victim.title || 'New chat'}”.`, () => {
    state.conversations.push(victim);
    persist();
    openConversation(victim);
  }, () => pruneImages(usedImageIds()));
}

// ---- sending -----------------------------------------------------------------------------
function stopGenerating() {
  if (state.controller) state.controller.abort();
}

// What an answer version keeps (Regenerate adds a version; the others stay to flip through).
const snapshot = ({ text, reasoning, thinkMs, stats, finish, state: s }) => ({ text, reasoning, thinkMs, stats, finish, state: s });
const CONTINUE_PROMPT = 'Continue your previous answer exactly where it stopped. Do not repeat anything.';

// Answers the conversation's last question. `previous`: the answer being regenerated (kept as
// a version); `resume`: an answer cut short, continued in place.
async function generate(autoRetry = true, { previous = null, resume = null } = {}) {
  const conversation = state.current;
  const messages = conversation.messages;
  const userIndex = resume ? messages.indexOf(resume) - 1 : messages.length - 1;
  const question = messages[userIndex];
  const resumeText = resume ? resume.text : '';
  const answer = resume || { role: 'assistant', text: '', state: 'streaming', stats: null, finish: null, preset: question.preset };
  Object.assign(answer, { state: 'streaming', finish: null, phase: 'sending', phaseStarted: Date.now(),
    hasImages: !resume && (question.images || []).length > 0 });
  if (previous && previous.text) answer.versions = previous.versions ? previous.versions.slice() : [snapshot(previous)];
  if (!resume) messages.push(answer);
  const controller = new AbortController();
  state.controller = controller;
  hideError();
  renderConversation();
  renderComposer();
  scrollToEnd();
  const li = ui.messageList.lastElementChild;
  const started = performance.now();
  let pieces = 0;
  let firstAt = 0;
  let frame = 0;
  const live = () => {
    const seconds = (performance.now() - started) / 1000;
    const writing = firstAt ? (performance.now() - firstAt) / 1000 : 0;
    return { elapsedMs: seconds * 1000, pieces, tokensPerSecond: writing > 0.2 && pieces > 1 ? (pieces - 1) / writing : null };
  };
  const paint = () => {
    frame = 0;
    if (state.current !== conversation) return;
    const stick = nearBottom();
    answer.live = live();
    fillAssistant(li, messages, messages.indexOf(answer), true, true);
    if (stick) scrollToEnd();
  };
  // Every second: the elapsed time, and whether the request waits in the server's queue.
  const ticker = setInterval(async () => {
    if (answer.phase === 'sending' && performance.now() - started > 400 && monitor.queued() > 0) {
      answer.phase = 'queued';
    }
    if (answer.phase === 'sending') monitor.now();
    if (state.current === conversation) {
      if (answer.text || answer.reasoning) paint(); else refreshWaiting(li, answer);
    }
  }, 1000);
  try {
    const body = buildRequest(conversation, userIndex, state.settings, state.props);
    if (resume) body.messages.push({ role: 'assistant', content: resumeText }, { role: 'user', content: CONTINUE_PROMPT });
    const result = await streamChat(body, {
      apiKey: state.settings.apiKey,
      signal: controller.signal,
      onHeaders: () => {
        answer.phase = 'reading';
        answer.phaseStarted = Date.now();
        if (state.current === conversation) refreshWaiting(li, answer);
      },
      onReasoning: (text) => {
        if (!firstAt) firstAt = performance.now();
        pieces += 1;
        addReasoning(answer, text, performance.now());
        if (!frame) frame = requestAnimationFrame(paint);
      },
      onDelta: (text) => {
        if (!firstAt) firstAt = performance.now();
        pieces += 1;
        endReasoning(answer, performance.now());
        answer.text += text;
        if (!frame) frame = requestAnimationFrame(paint);
      },
    });
    answer.state = 'done';
    answer.finish = result.finishReason;
    answer.stats = { ...statsFrom(result), elapsedMs: performance.now() - started };
  } catch (error) {
    if (error.name === 'AbortError') {
      answer.state = 'stopped';
      const l = live();
      answer.stats = { ttftMs: firstAt ? firstAt - started : null, tokensPerSecond: l.tokensPerSecond, completionTokens: pieces || null, approximate: true, elapsedMs: l.elapsedMs };
    } else {
      const failure = error instanceof ApiFailure ? error : new ApiFailure('stream', error.message);
      if (answer.text !== resumeText || (answer.text && !resume)) answer.state = 'error';
      else if (resume) answer.state = 'stopped';
      else messages.splice(messages.indexOf(answer), 1, ...(previous && previous.text ? [previous] : []));
      if (!retryable(failure)) {
        refuse(conversation, question, failure);
      } else if (failure.status === 429 && autoRetry) {
        busyCountdown(failure, conversation);
      } else {
        showError(`${describeFailure(failure)}${failure.status === 429 && failure.retryAfter ? ` Try again in ${failure.retryAfter} s.` : ''}`, () => retryLast(conversation));
      }
      if (failure.status === 401) openSettings();
    }
  } finally {
    clearInterval(ticker);
    cancelAnimationFrame(frame);
    endReasoning(answer, performance.now());
    delete answer.live;
    delete answer.phase;
    if (answer.versions && messages.includes(answer)) {
      if (resume && answer.version !== undefined) answer.versions[answer.version] = snapshot(answer);
      else answer.versions.push(snapshot(answer));
      answer.version = resume && answer.version !== undefined ? answer.version : answer.versions.length - 1;
    }
    state.controller = null;
    conversation.updated = Date.now();
    persist();
    if (state.current === conversation) {
      const stick = nearBottom();
      const hadFocus = document.activeElement === ui.stop || document.activeElement === document.body;
      renderConversation();
      renderComposer();
      if (stick) scrollToEnd();
      if (hadFocus) ui.prompt.focus();
    }
  }
}

// A refused question is marked and left out of the context; its text and images go back to
// the composer, where the image can be removed before sending again.
function refuse(conversation, question, failure) {
  question.failed = { status: failure.status, message: failure.message };
  if (state.current !== conversation) return;
  if (!ui.prompt.value.trim()) {
    ui.prompt.value = question.text;
    autoGrow();
  }
  state.attachments.restore(conversation.id, question.images || []);
  state.preset = question.preset || 'ask';
  showError(`${describeFailure(failure)} The question is back in the box below; change it or remove the image and send again.`, null);
}

function retryLast(conversation, autoRetry = true) {
  if (busy() || state.current !== conversation) return;
  const messages = conversation.messages;
  let previous = null;
  while (messages.length && messages[messages.length - 1].role === 'assistant') previous = messages.pop();
  if (!messages.length || messages[messages.length - 1].failed) return;
  // A page-by-page reading is read again page by page (while the tab holds the document).
  const pdf = previous && previous.kind === 'pages' && getCachedImage(previous.document);
  if (pdf && pdf.dataUrl) {
    readPagesAnswer(pdf);
    return;
  }
  generate(autoRetry, { previous: previous && previous.state !== 'error' ? previous : null });
}

const readPagesAnswer = (record) => answerPages(record, { state, ui, persist, hideError, renderConversation,
  renderComposer, scrollToEnd, nearBottom, showFailure: (failure) => showError(describeFailure(failure), null) });

function send() {
  if (busy()) return;
  const c = state.current;
  if (state.attachments.hasPending(c.id)) {
    notice('Wait a moment: an image is still being prepared.');
    return;
  }
  const text = ui.prompt.value;
  const preset = state.preset;
  const ready = state.attachments.of(c.id).filter((e) => e.status === 'ready');
  if (!text.trim() && !ready.length && preset === 'ask') return;
  const lastImages = [...c.messages].reverse().find((m) => m.role === 'user' && !m.failed && m.images && m.images.length);
  if (preset !== 'ask' && !ready.length && !lastImages) {
    notice('Attach an image first.');
    return;
  }
  const taken = state.attachments.take(c.id);
  for (const entry of taken) {
    if (entry.image.kind) {  // a video's or document's preview as sent (its settings may have changed)
      putImage(entry.image);
      continue;
    }
    const detail = entry.detail && entry.detail !== 'auto' ? entry.detail : undefined;
    if (entry.image.detail !== detail) {
      entry.image.detail = detail;
      putImage(entry.image);
    }
  }
  // Read text with a document attached: one answer per chosen page (page_ocr.js).
  const pdf = preset === 'ocr' && taken.map((e) => e.image).find((image) => image.kind === 'document');
  const message = { role: 'user', text, preset, images: taken.map((e) => e.image.id) };
  // Tasks on "the image" with nothing attached use the conversation's latest image again.
  if (preset !== 'ask' && !message.images.length) message.images = [lastImages.images[lastImages.images.length - 1]];
  c.messages.push(message);
  if (!c.title) c.title = titleFor(message);
  if (!state.conversations.includes(c)) state.conversations.push(c);
  ui.prompt.value = '';
  autoGrow();
  if (pdf) {
    readPagesAnswer(pdf);
  } else {
    generate();
  }
}

// ---- wiring ------------------------------------------------------------------------------
function closeSidebar(returnFocus) {
  const wasOpen = document.body.classList.contains('sidebar-open');
  setDrawer(false);
  if (wasOpen && returnFocus) $('menu-button').focus();
}

function autoGrow() {
  ui.prompt.style.height = 'auto';
  ui.prompt.style.height = `${Math.min(ui.prompt.scrollHeight, 240)}px`;
}

applyTheme(state.settings.theme);
const addFiles = (files) => addFilesTo(files, { state, notice, renderComposer });
wireMediaTiles(ui.attachments, {
  find: (key) => state.attachments.entries.find((e) => e.key === key && e.image),
  apiKey: () => state.settings.apiKey,
  render: () => renderComposer(),
  readPages: () => {
    state.preset = 'ocr';
    send();
  },
});
wireControls({
  state, ui, busy, send, stopGenerating, addFiles, persist, renderConversation, renderComposer,
  retryLast, generate, openConversation, startNewConversation, deleteConversation, hideError,
  usedImageIds, closeSidebar, autoGrow, notice, drawSidebar,
  continueAnswer: (message) => { if (!busy()) generate(true, { resume: message }); },
});
initLightbox();
initSettings({
  getSettings: () => state.settings,
  getProps: () => state.props,
  onSave: (settings) => {
    state.settings = settings;
    saveSettings(settings);
    applyTheme(settings.theme);
    refreshProps();
    renderConversation();
  },
});
const latest = [...state.conversations].sort((a, b) => b.updated - a.updated)[0];
if (latest) openConversation(latest); else startNewConversation(false);
refreshProps();
const monitor = startMonitor({ chip: ui.monitor, onReachable, getRuntime: () => state.props && state.props.runtime });
