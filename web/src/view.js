// Renders a conversation's messages. Model text only ever reaches the page through
// renderInto (sanitised Markdown); user text is set as plain text.
import { renderInto } from './markdown.js';
import { boxesFigure, parseBoxes } from './grounding.js';
import { getCachedImage } from './store.js';
import { presetLabel } from './presets.js';
import { reasoningBlock } from './reasoning.js';
import { linkTimes, mediaCard, pagesBody } from './media_view.js';

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function actionButton(label, action, index) {
  const button = el('button', 'link-button', label);
  button.type = 'button';
  button.dataset.action = action;
  button.dataset.index = String(index);
  return button;
}

const seconds = (ms) => (ms >= 1000 ? `${(ms / 1000).toFixed(ms >= 10000 ? 0 : 1)} s` : `${Math.round(ms)} ms`);

function formatStats(stats) {
  if (!stats) return [];
  const parts = [];
  if (stats.ttftMs !== null && stats.ttftMs !== undefined) {
    parts.push(['First token', stats.ttftMs >= 1000 ? `${(stats.ttftMs / 1000).toFixed(2)} s` : `${Math.round(stats.ttftMs)} ms`]);
  }
  if (stats.tokensPerSecond) parts.push(['Speed', `${stats.approximate ? '≈ ' : ''}${stats.tokensPerSecond.toFixed(1)} tok/s`]);
  if (stats.promptTokens !== null && stats.promptTokens !== undefined) parts.push(['Prompt', `${stats.promptTokens} tok`]);
  if (stats.imageTokens) parts.push(['Images', `${stats.imageTokens} tok`]);
  if (stats.completionTokens !== null && stats.completionTokens !== undefined) parts.push(['Answer', `${stats.approximate ? '≈ ' : ''}${stats.completionTokens} tok`]);
  if (stats.elapsedMs) parts.push(['Total', seconds(stats.elapsedMs)]);
  return parts;
}

// A thumbnail that opens the lightbox (see lightbox.js) when clicked.
export function zoomable(image, className, extraClass = '') {
  const button = el('button', `zoom-button ${extraClass}`.trim());
  button.type = 'button';
  button.dataset.zoom = image.id;
  button.setAttribute('aria-label', `Enlarge ${image.name || 'image'}`);
  button.append(thumbnail(image, className));
  return button;
}

export function thumbnail(image, className) {
  const img = el('img', className);
  img.src = image.dataUrl;
  img.alt = image.name || 'image';
  img.width = image.width;
  img.height = image.height;
  img.decoding = 'async';
  return img;
}

function userMessage(message, index, isLast, editing, dropped) {
  const li = el('li', message.failed ? 'message user failed' : 'message user');
  li.dataset.index = String(index);
  li.append(el('h2', 'visually-hidden', 'You said'));
  const bubble = el('div', 'bubble');
  if (message.preset && message.preset !== 'ask') bubble.append(el('span', 'chip', presetLabel(message.preset)));
  if (message.images && message.images.length) {
    const row = el('div', 'message-images');
    for (const id of message.images) {
      const image = getCachedImage(id);
      if (image && image.kind) {
        row.append(mediaCard(image));
      } else if (image && dropped.has(id)) {
        const wrap = el('span', 'out-of-context');
        wrap.append(zoomable(image, 'message-image'), el('span', 'image-badge', 'Not in context'));
        row.append(wrap);
      } else if (image) {
        row.append(zoomable(image, 'message-image'));
      } else {
        row.append(el('span', 'missing-image', 'image not stored'));
      }
    }
    bubble.append(row);
  }
  if (editing) {
    const label = el('label', 'visually-hidden', 'Edit your question');
    label.htmlFor = 'edit-box';
    const box = el('textarea', 'edit-box');
    box.id = 'edit-box';
    box.value = message.text;
    box.rows = Math.min(8, Math.max(2, message.text.split('\n').length));
    const actions = el('div', 'edit-actions');
    const save = el('button', 'button primary', 'Send');
    save.type = 'button';
    save.dataset.action = 'edit-send';
    save.dataset.index = String(index);
    const cancel = el('button', 'button', 'Cancel');
    cancel.type = 'button';
    cancel.dataset.action = 'edit-cancel';
    actions.append(cancel, save);
    bubble.append(label, box, actions);
  } else if (message.text) {
    bubble.append(el('p', 'user-text', message.text));
  }
  li.append(bubble);
  if (message.failed) {
    li.append(el('p', 'failed-note', `Not answered: the server refused this question (${message.failed.status}: ${message.failed.message}). It is left out of the conversation.`));
  }
  if (isLast && !editing && !message.failed) {
    const actions = el('div', 'message-actions');
    actions.append(actionButton('Edit', 'edit', index));
    li.append(actions);
  }
  return li;
}

// The images of the question a grounding answer replies to.
function questionImages(messages, index) {
  for (let i = index - 1; i >= 0; i--) {
    const m = messages[i];
    if (m.role === 'user') return (m.images || []).map(getCachedImage).filter((image) => image && !image.kind);
  }
  return [];
}

// The latest video asked about before an answer (its times link to that video's frames).
function questionVideo(messages, index) {
  for (let i = index - 1; i >= 0; i--) {
    const m = messages[i];
    const video = m.role === 'user' && (m.images || []).map(getCachedImage).find((r) => r && r.kind === 'video' && r.preview);
    if (video) return video;
  }
  return null;
}

// The image the boxes are drawn on: the one chosen, else the question's last; with several, a
// choice and a hint (the model does not say which image its boxes belong to).
function groundingView(messages, index, boxes) {
  const images = questionImages(messages, index);
  const message = messages[index];
  if (!images.length) return null;
  const image = images.find((i) => i.id === message.groundOn) || images[images.length - 1];
  const wrap = el('div', 'grounding-wrap');
  if (images.length > 1) {
    const choice = el('div', 'ground-choice');
    choice.setAttribute('role', 'group');
    choice.setAttribute('aria-label', 'Image the boxes are drawn on');
    choice.append(el('span', 'ground-hint', `The question had ${images.length} images; the model does not say which one its boxes belong to. Draw them on:`));
    images.forEach((candidate, n) => {
      const button = el('button', 'button small', `${n + 1}. ${candidate.name}`);
      button.type = 'button';
      button.dataset.action = 'ground-on';
      button.dataset.index = String(index);
      button.dataset.image = candidate.id;
      button.setAttribute('aria-pressed', String(candidate === image));
      choice.append(button);
    });
    wrap.append(choice);
  }
  wrap.append(boxesFigure(image, boxes, `${image.name} with the objects found`));
  return wrap;
}

// While nothing is written yet: what the server is doing, with the time it has taken.
export function waitingText(message) {
  const seconds = message.phaseStarted ? Math.floor((Date.now() - message.phaseStarted) / 1000) : 0;
  const time = seconds >= 1 ? ` ${seconds} s` : '';
  switch (message.phase) {
    case 'queued': return `Waiting for a free slot…${time}`;
    case 'reading': return `${message.hasImages ? 'Reading image' : 'Reading the question'}…${time}`;
    default: return 'Thinking…';
  }
}

// OCR answers are text, not Markdown: shown as written (line breaks, columns, # lines kept),
// with a toggle to the rendered view.
function ocrBody(message, index, images) {
  const body = el('div', message.side && images.length ? 'ocr side-by-side' : 'ocr');
  const bar = el('div', 'ocr-bar');
  const toggle = el('button', 'link-button', message.rendered ? 'Show raw text' : 'Show formatted');
  toggle.type = 'button';
  toggle.dataset.action = 'ocr-toggle';
  toggle.dataset.index = String(index);
  toggle.setAttribute('aria-pressed', String(!!message.rendered));
  const copy = el('button', 'link-button', 'Copy text');
  copy.type = 'button';
  copy.dataset.action = 'copy';
  copy.dataset.index = String(index);
  const download = el('button', 'link-button', 'Download .txt');
  download.type = 'button';
  download.dataset.action = 'download-text';
  download.dataset.index = String(index);
  const markdown = el('button', 'link-button', 'Download .md');
  markdown.type = 'button';
  markdown.dataset.action = 'download-md';
  markdown.dataset.index = String(index);
  bar.append(el('span', 'ocr-label', 'Text read from the image'), toggle, copy, download, markdown);
  if (images.length) {
    const side = el('button', 'link-button', 'Beside the image');
    side.type = 'button';
    side.dataset.action = 'ocr-side';
    side.dataset.index = String(index);
    side.setAttribute('aria-pressed', String(!!message.side));
    bar.append(side);
  }
  body.append(bar);
  const content = el('div', 'ocr-content');
  if (message.side && images.length) {
    const figure = el('div', 'ocr-image');
    for (const image of images) figure.append(zoomable(image, 'message-image'));
    content.append(figure);
  }
  if (message.rendered) {
    const md = el('div', 'markdown');
    renderInto(md, message.text);
    content.append(md);
  } else {
    const pre = el('pre', 'ocr-text', message.text);
    pre.tabIndex = 0;
    content.append(pre);
  }
  body.append(content);
  return body;
}

export function fillAssistant(li, messages, index, isLast, busy) {
  const message = messages[index];
  li.replaceChildren();
  li.className = `message assistant ${message.state || 'done'}`;
  li.setAttribute('aria-busy', message.state === 'streaming' ? 'true' : 'false');
  li.dataset.chars = String(message.text.length);
  li.append(el('h2', 'visually-hidden', 'Answer'));
  const boxes = message.text ? parseBoxes(message.text) : [];
  if (boxes.length) {
    const view = groundingView(messages, index, boxes);
    if (view) li.append(view);
  }
  const thoughts = reasoningBlock(message);
  if (thoughts) li.append(thoughts);
  const question = messages[index - 1];
  const preset = message.preset || (question && question.preset);
  let body = el('div', 'markdown');
  if (message.kind === 'pages') {
    body = pagesBody(message, index, getCachedImage(message.document));
  } else if (message.text && preset === 'ocr' && message.state !== 'streaming') {
    body = ocrBody(message, index, questionImages(messages, index));
  } else if (message.text && preset === 'ocr') {
    body.append(el('pre', 'ocr-text', message.text));
  } else if (message.text) {
    renderInto(body, message.text);
    const video = questionVideo(messages, index);
    if (video) linkTimes(body, video);
  } else if (message.state === 'streaming' && !message.reasoning) {
    body.append(el('p', 'waiting', waitingText(message)));
  }
  if (message.text && !message.text.trim()) body.append(el('p', 'blank-note', `(${message.text.length} blank characters)`));
  li.append(body);
  if (message.state === 'stopped') li.append(el('p', 'state-note', 'Stopped.'));
  if (message.state === 'error') li.append(el('p', 'state-note', 'Interrupted.'));
  if (message.finish === 'length') li.append(el('p', 'state-note', 'Reached the max tokens limit.'));
  if (message.state === 'streaming' && message.live && message.text) {
    const l = message.live;
    li.append(el('p', 'live-stats', `${l.tokensPerSecond ? `${l.tokensPerSecond.toFixed(1)} tok/s · ` : ''}${seconds(l.elapsedMs)}`));
  }
  const stats = formatStats(message.stats);
  if (stats.length) {
    const list = el('dl', 'stats');
    for (const [name, value] of stats) {
      const item = el('div');
      item.append(el('dt', '', name), el('dd', '', value));
      list.append(item);
    }
    li.append(list);
  }
  if (message.state !== 'streaming') {
    const actions = el('div', 'message-actions');
    if (message.versions && message.versions.length > 1) {
      const nav = el('span', 'versions');
      const prev = actionButton('‹', 'version', index);
      prev.dataset.step = '-1';
      prev.setAttribute('aria-label', 'Previous version');
      prev.disabled = busy || message.version === 0;
      const next = actionButton('›', 'version', index);
      next.dataset.step = '1';
      next.setAttribute('aria-label', 'Next version');
      next.disabled = busy || message.version === message.versions.length - 1;
      nav.append(prev, el('span', 'version-count', `${message.version + 1} / ${message.versions.length}`), next);
      actions.append(nav);
    }
    actions.append(actionButton('Copy', 'copy', index));
    if (isLast && !busy && (message.finish === 'length' || message.state === 'stopped') && message.text) {
      actions.append(actionButton('Continue', 'continue', index));
    }
    if (isLast && !busy) actions.append(actionButton('Regenerate', 'regenerate', index));
    li.append(actions);
  }
}

// Updates only the waiting line of a streaming answer (the elapsed time ticks every second).
export function refreshWaiting(li, message) {
  const line = li && li.querySelector('.waiting');
  if (line) line.textContent = waitingText(message);
}

// `dropped`: image ids the model no longer sees; a divider after the last turn showing one.
export function renderMessages(list, messages, { busy, editingIndex, dropped = new Set(), maxImages = 0 }) {
  let lastDropped = -1;
  messages.forEach((m, i) => { if (m.role === 'user' && (m.images || []).some((id) => dropped.has(id))) lastDropped = i; });
  const after = lastDropped >= 0 && messages[lastDropped + 1] && messages[lastDropped + 1].role === 'assistant' ? lastDropped + 1 : lastDropped;
  const items = [];
  messages.forEach((message, index) => {
    const isLast = index === messages.length - 1;
    if (message.role === 'user') {
      const lastUser = isLast || (index === messages.length - 2 && messages[index + 1].role === 'assistant');
      items.push(userMessage(message, index, lastUser && !busy, editingIndex === index, dropped));
    } else {
      const li = el('li');
      li.dataset.index = String(index);
      fillAssistant(li, messages, index, isLast, busy);
      items.push(li);
    }
    if (index === after && after >= 0) {
      const divider = el('li', 'context-divider');
      divider.append(el('span', '', `The model no longer sees ${dropped.size} earlier ${dropped.size === 1 ? 'image' : 'images'} marked “Not in context”${maxImages ? ` (at most ${maxImages} images per request)` : ''}.`));
      items.push(divider);
    }
  });
  list.replaceChildren(...items);
}
