// The qvl chat page: wires the composer, the conversation list, settings and streaming.
import { ApiFailure, fetchProps, streamChat } from './api.js';
import { buildRequest, newConversation, statsFrom, titleFor } from './chat.js';
import { imageFiles, prepareImage } from './images.js';
import { PRESETS } from './presets.js';
import { getCachedImage, loadConversations, loadImages, loadSettings, pruneImages, putImage, saveConversations, saveSettings } from './store.js';
import { fillAssistant, renderMessages, thumbnail } from './view.js';
import { initSettings, openSettings } from './settings.js';

const $ = (id) => document.getElementById(id);
const ui = {
  sidebar: $('sidebar'), scrim: $('scrim'), menu: $('menu-button'), newChat: $('new-chat'),
  list: $('conversation-list'), title: $('chat-title'), status: $('model-status'),
  statusText: $('model-status-text'), clear: $('clear-chat'), openSettings: $('open-settings'),
  messages: $('messages'), messageList: $('message-list'), empty: $('empty-state'),
  banner: $('error-banner'), bannerText: $('error-text'), retry: $('error-retry'),
  dismiss: $('error-dismiss'), composer: $('composer'), presets: $('presets'),
  attachments: $('attachments'), notice: $('notice'), fileInput: $('file-input'),
  attach: $('attach'), prompt: $('prompt'), send: $('send'), stop: $('stop'),
  dropOverlay: $('drop-overlay'),
};

const state = {
  conversations: loadConversations(),
  current: null,
  settings: loadSettings(),
  props: null,
  attachments: [],
  preset: 'ask',
  controller: null,
  editingIndex: -1,
  retryAction: null,
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
  const ids = new Set(state.attachments.map((a) => a.id));
  for (const c of state.conversations) for (const m of c.messages) for (const id of m.images || []) ids.add(id);
  return ids;
}

// ---- rendering ---------------------------------------------------------------------------
function busy() { return state.controller !== null; }

function renderSidebar() {
  const items = [...state.conversations].sort((a, b) => b.updated - a.updated).map((c) => {
    const li = document.createElement('li');
    li.className = c === state.current ? 'conversation active' : 'conversation';
    const open = document.createElement('button');
    open.type = 'button';
    open.className = 'conversation-open';
    open.dataset.id = c.id;
    if (c === state.current) open.setAttribute('aria-current', 'true');
    const title = document.createElement('span');
    title.className = 'conversation-title';
    title.textContent = c.title || 'New chat';
    const when = document.createElement('span');
    when.className = 'conversation-date';
    when.textContent = new Date(c.updated).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
    open.append(title, when);
    const del = document.createElement('button');
    del.type = 'button';
    del.className = 'icon-button small conversation-delete';
    del.dataset.deleteId = c.id;
    del.setAttribute('aria-label', `Delete conversation “${c.title || 'New chat'}”`);
    del.innerHTML = '<svg aria-hidden="true" viewBox="0 0 24 24"><path d="M6 6l12 12M18 6 6 18"/></svg>';
    li.append(open, del);
    return li;
  });
  ui.list.replaceChildren(...items);
}

function renderConversation() {
  const c = state.current;
  ui.title.textContent = c.title || 'New chat';
  document.title = c.title ? `${c.title} · qvl` : 'qvl';
  ui.empty.hidden = c.messages.length > 0;
  renderMessages(ui.messageList, c.messages, { busy: busy(), editingIndex: state.editingIndex });
  ui.clear.disabled = c.messages.length === 0 || busy();
  renderSidebar();
}

function renderComposer() {
  ui.send.hidden = busy();
  ui.stop.hidden = !busy();
  const items = state.attachments.map((image, i) => {
    const li = document.createElement('li');
    li.className = 'attachment';
    li.append(thumbnail(image, 'attachment-thumb'));
    const remove = document.createElement('button');
    remove.type = 'button';
    remove.className = 'attachment-remove';
    remove.dataset.remove = String(i);
    remove.setAttribute('aria-label', `Remove ${image.name}`);
    remove.innerHTML = '<svg aria-hidden="true" viewBox="0 0 24 24"><path d="M7 7l10 10M17 7 7 17"/></svg>';
    li.append(remove);
    if (image.scaled) li.title = `${image.name}: scaled from ${image.originalWidth}×${image.originalHeight} to ${image.width}×${image.height}`;
    return li;
  });
  ui.attachments.replaceChildren(...items);
  ui.attachments.hidden = items.length === 0;
  const preset = PRESETS.find((p) => p.id === state.preset);
  ui.prompt.placeholder = preset.placeholder;
  for (const input of ui.presets.querySelectorAll('input')) input.checked = input.value === state.preset;
}

function scrollToEnd() {
  ui.messages.scrollTop = ui.messages.scrollHeight;
}

let noticeTimer = 0;
function notice(text) {
  ui.notice.textContent = text;
  clearTimeout(noticeTimer);
  noticeTimer = setTimeout(() => { ui.notice.textContent = ''; }, 6000);
}

// ---- errors ------------------------------------------------------------------------------
function showError(message, retry) {
  ui.bannerText.textContent = message;
  state.retryAction = retry || null;
  ui.retry.hidden = !retry;
  ui.banner.hidden = false;
}

function hideError() {
  ui.banner.hidden = true;
  state.retryAction = null;
}

function describeFailure(error) {
  if (error.kind === 'network') return `Connection lost: ${error.message}.`;
  if (error.status === 429) {
    return `The server is busy (every slot is in use and the queue is full). ${error.retryAfter ? `Try again in ${error.retryAfter} s.` : 'Try again shortly.'}`;
  }
  if (error.status === 401) return 'The server needs an API key: enter it in Settings.';
  if (error.status === 503) return `The server is not ready: ${error.message}`;
  if (error.status) return `The server refused the request (${error.status}): ${error.message}`;
  return `The answer failed: ${error.message}`;
}

// ---- model status ------------------------------------------------------------------------
let propsTimer = 0;
async function refreshProps() {
  clearTimeout(propsTimer);
  try {
    state.props = await fetchProps(state.settings.apiKey);
    ui.status.dataset.state = 'ready';
    const ctx = state.props.context_length ? ` · ${Math.round(state.props.context_length / 1024)}k context` : '';
    ui.statusText.textContent = `${state.props.model}${ctx}`;
  } catch (error) {
    const loading = error.status === 503;
    ui.status.dataset.state = loading ? 'loading' : 'error';
    ui.statusText.textContent = loading ? 'Loading the model…' : error.status === 401 ? 'API key needed (Settings)' : 'Server unreachable';
    propsTimer = setTimeout(refreshProps, loading ? 1500 : 5000);
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
  scrollToEnd();
  closeSidebar();
}

function startNewConversation(focus = true) {
  const empty = state.conversations.find((c) => c.messages.length === 0);
  const c = empty || newConversation();
  if (!empty) state.conversations.push(c);
  openConversation(c);
  if (focus) ui.prompt.focus();
}

function deleteConversation(id) {
  state.conversations = state.conversations.filter((c) => c.id !== id);
  persist();
  pruneImages(usedImageIds());
  if (state.current.id === id) {
    const next = [...state.conversations].sort((a, b) => b.updated - a.updated)[0];
    if (next) openConversation(next); else startNewConversation();
  } else {
    renderSidebar();
  }
}

// ---- attachments -------------------------------------------------------------------------
function imageLimits() {
  const image = (state.props && state.props.image) || {};
  const tokens = Math.max(image.high_detail_max_tokens || 1280, image.max_tokens || 0);
  return {
    maxPixels: tokens * (image.pixels_per_token || 1024) * 2,
    maxBytes: Math.floor((image.max_image_bytes || 16 << 20) * 0.7),
    maxCount: image.max_images_per_request || 8,
  };
}

async function addFiles(files) {
  const limits = imageLimits();
  for (const file of files) {
    if (state.attachments.length >= limits.maxCount) {
      notice(`At most ${limits.maxCount} images per message.`);
      break;
    }
    try {
      const image = await prepareImage(file, limits);
      if (state.attachments.some((a) => a.id === image.id)) {
        notice(`${image.name} is attached already.`);
        continue;
      }
      await putImage(getCachedImage(image.id) || image);
      state.attachments.push(getCachedImage(image.id));
      if (image.scaled) notice(`${image.name} was scaled to ${image.width}×${image.height}, the most the model can use.`);
    } catch (error) {
      notice(`Could not add ${file.name || 'the image'}: ${error.message}.`);
    }
  }
  renderComposer();
}

// ---- sending -----------------------------------------------------------------------------
function stopGenerating() {
  if (state.controller) state.controller.abort();
}

async function generate() {
  const conversation = state.current;
  const messages = conversation.messages;
  const userIndex = messages.length - 1;
  const answer = { role: 'assistant', text: '', state: 'streaming', stats: null, finish: null };
  messages.push(answer);
  const controller = new AbortController();
  state.controller = controller;
  hideError();
  renderConversation();
  renderComposer();
  scrollToEnd();
  const li = ui.messageList.lastElementChild;
  let frame = 0;
  const paint = () => {
    frame = 0;
    if (state.current !== conversation) return;
    const nearBottom = ui.messages.scrollHeight - ui.messages.scrollTop - ui.messages.clientHeight < 80;
    fillAssistant(li, messages, messages.indexOf(answer), true, true);
    if (nearBottom) scrollToEnd();
  };
  try {
    const body = buildRequest(conversation, userIndex, state.settings, state.props);
    const result = await streamChat(body, {
      apiKey: state.settings.apiKey,
      signal: controller.signal,
      onDelta: (text) => {
        answer.text += text;
        if (!frame) frame = requestAnimationFrame(paint);
      },
    });
    answer.state = 'done';
    answer.finish = result.finishReason;
    answer.stats = statsFrom(result);
  } catch (error) {
    if (error.name === 'AbortError') {
      answer.state = 'stopped';
    } else {
      const failure = error instanceof ApiFailure ? error : new ApiFailure('stream', error.message);
      if (answer.text) {
        answer.state = 'error';
      } else {
        messages.splice(messages.indexOf(answer), 1);
      }
      showError(describeFailure(failure), () => retryLast(conversation));
      if (failure.status === 401) openSettings();
    }
  } finally {
    cancelAnimationFrame(frame);
    state.controller = null;
    conversation.updated = Date.now();
    persist();
    if (state.current === conversation) {
      const nearBottom = ui.messages.scrollHeight - ui.messages.scrollTop - ui.messages.clientHeight < 80;
      renderConversation();
      renderComposer();
      if (nearBottom) scrollToEnd();
    }
  }
}

function retryLast(conversation) {
  if (busy() || state.current !== conversation) return;
  const messages = conversation.messages;
  while (messages.length && messages[messages.length - 1].role === 'assistant') messages.pop();
  if (!messages.length) return;
  generate();
}

function send() {
  if (busy()) return;
  const text = ui.prompt.value;
  const preset = state.preset;
  if (!text.trim() && !state.attachments.length && preset === 'ask') return;
  const c = state.current;
  const lastImages = [...c.messages].reverse().find((m) => m.role === 'user' && m.images && m.images.length);
  if (preset !== 'ask' && !state.attachments.length && !lastImages) {
    notice('Attach an image first.');
    return;
  }
  const message = { role: 'user', text, preset, images: state.attachments.map((a) => a.id) };
  // Tasks on "the image" with nothing attached use the conversation's latest image again.
  if (preset !== 'ask' && !message.images.length) message.images = [lastImages.images[lastImages.images.length - 1]];
  c.messages.push(message);
  if (!c.title) c.title = titleFor(message);
  if (!state.conversations.includes(c)) state.conversations.push(c);
  state.attachments = [];
  ui.prompt.value = '';
  autoGrow();
  generate();
}

// ---- message actions ---------------------------------------------------------------------
async function copyText(text, button) {
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    const area = document.createElement('textarea');
    area.value = text;
    document.body.append(area);
    area.select();
    document.execCommand('copy');
    area.remove();
  }
  const old = button.textContent;
  button.textContent = 'Copied';
  setTimeout(() => { button.textContent = old; }, 1500);
}

function onMessageAction(event) {
  const button = event.target.closest('button');
  if (!button) return;
  const messages = state.current.messages;
  if (button.dataset.copyCode !== undefined) {
    const code = button.closest('.code-block').querySelector('code');
    copyText(code ? code.textContent : '', button);
    return;
  }
  const index = Number(button.dataset.index);
  switch (button.dataset.action) {
    case 'copy': copyText(messages[index].text, button); break;
    case 'regenerate': retryLast(state.current); break;
    case 'edit':
      state.editingIndex = index;
      renderConversation();
      $('edit-box')?.focus();
      break;
    case 'edit-cancel':
      state.editingIndex = -1;
      renderConversation();
      break;
    case 'edit-send': {
      const box = $('edit-box');
      const i = state.editingIndex;
      state.editingIndex = -1;
      messages[i].text = box.value;
      messages.splice(i + 1);
      if (i === 0) state.current.title = titleFor(messages[0]);
      generate();
      break;
    }
    default:
  }
}

// ---- sidebar (a drawer on narrow screens) ------------------------------------------------
function closeSidebar() {
  document.body.classList.remove('sidebar-open');
  ui.menu.setAttribute('aria-expanded', 'false');
  ui.scrim.hidden = true;
}

// ---- wiring ------------------------------------------------------------------------------
function autoGrow() {
  ui.prompt.style.height = 'auto';
  ui.prompt.style.height = `${Math.min(ui.prompt.scrollHeight, 240)}px`;
}

function buildPresets() {
  for (const preset of PRESETS) {
    const label = document.createElement('label');
    label.className = 'preset';
    const input = document.createElement('input');
    input.type = 'radio';
    input.name = 'preset';
    input.value = preset.id;
    input.id = `preset-${preset.id}`;
    const span = document.createElement('span');
    span.textContent = preset.label;
    label.append(input, span);
    ui.presets.append(label);
  }
  ui.presets.addEventListener('change', (e) => {
    state.preset = e.target.value;
    renderComposer();
  });
}

function wire() {
  ui.composer.addEventListener('submit', (e) => { e.preventDefault(); send(); });
  ui.prompt.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      send();
    }
  });
  ui.prompt.addEventListener('input', autoGrow);
  ui.stop.addEventListener('click', stopGenerating);
  ui.attach.addEventListener('click', () => ui.fileInput.click());
  ui.fileInput.addEventListener('change', () => {
    addFiles([...ui.fileInput.files]);
    ui.fileInput.value = '';
  });
  ui.attachments.addEventListener('click', (e) => {
    const button = e.target.closest('[data-remove]');
    if (!button) return;
    state.attachments.splice(Number(button.dataset.remove), 1);
    renderComposer();
    ui.prompt.focus();
  });
  document.addEventListener('paste', (e) => {
    const files = imageFiles(e.clipboardData);
    if (files.length) {
      e.preventDefault();
      addFiles(files);
    }
  });
  let dragDepth = 0;
  const hasFiles = (e) => e.dataTransfer && [...e.dataTransfer.types].includes('Files');
  window.addEventListener('dragenter', (e) => { if (hasFiles(e)) { dragDepth += 1; ui.dropOverlay.hidden = false; } });
  window.addEventListener('dragleave', () => { dragDepth = Math.max(0, dragDepth - 1); if (!dragDepth) ui.dropOverlay.hidden = true; });
  window.addEventListener('dragover', (e) => { if (hasFiles(e)) e.preventDefault(); });
  window.addEventListener('drop', (e) => {
    e.preventDefault();
    dragDepth = 0;
    ui.dropOverlay.hidden = true;
    const files = imageFiles(e.dataTransfer);
    if (files.length) addFiles(files);
  });
  ui.messageList.addEventListener('click', onMessageAction);
  ui.messageList.addEventListener('keydown', (e) => {
    if (e.target.id === 'edit-box' && e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      ui.messageList.querySelector('[data-action="edit-send"]').click();
    } else if (e.target.id === 'edit-box' && e.key === 'Escape') {
      ui.messageList.querySelector('[data-action="edit-cancel"]').click();
    }
  });
  ui.list.addEventListener('click', (e) => {
    const del = e.target.closest('[data-delete-id]');
    if (del) return deleteConversation(del.dataset.deleteId);
    const open = e.target.closest('[data-id]');
    if (open) openConversation(state.conversations.find((c) => c.id === open.dataset.id));
  });
  ui.newChat.addEventListener('click', () => startNewConversation());
  ui.clear.addEventListener('click', () => {
    if (busy() || !state.current.messages.length) return;
    if (!window.confirm('Clear every message of this conversation?')) return;
    state.current.messages = [];
    state.current.title = '';
    state.editingIndex = -1;
    persist();
    pruneImages(usedImageIds());
    hideError();
    renderConversation();
  });
  ui.menu.addEventListener('click', () => {
    const open = !document.body.classList.contains('sidebar-open');
    document.body.classList.toggle('sidebar-open', open);
    ui.menu.setAttribute('aria-expanded', String(open));
    ui.scrim.hidden = !open;
    if (open) ui.newChat.focus();
  });
  ui.scrim.addEventListener('click', closeSidebar);
  document.addEventListener('keydown', (e) => {
    if (e.key === 'Escape' && document.body.classList.contains('sidebar-open')) closeSidebar();
  });
  ui.retry.addEventListener('click', () => { const retry = state.retryAction; hideError(); if (retry) retry(); });
  ui.dismiss.addEventListener('click', hideError);
  ui.openSettings.addEventListener('click', openSettings);
}

buildPresets();
wire();
initSettings({
  getSettings: () => state.settings,
  getProps: () => state.props,
  onSave: (settings) => {
    state.settings = settings;
    saveSettings(settings);
    refreshProps();
  },
});
const latest = [...state.conversations].sort((a, b) => b.updated - a.updated)[0];
if (latest) {
  openConversation(latest);
} else {
  startNewConversation(false);
}
renderComposer();
refreshProps();
