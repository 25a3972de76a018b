// Renders a conversation's messages. Model text only ever reaches the page through
// renderInto (sanitised Markdown); user text is set as plain text.
import { renderInto } from './markdown.js';
import { boxesFigure, parseBoxes } from './grounding.js';
import { getCachedImage } from './store.js';
import { presetLabel } from './presets.js';

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

function formatStats(stats) {
  if (!stats) return [];
  const parts = [];
  if (stats.ttftMs !== null && stats.ttftMs !== undefined) {
    parts.push(['First token', stats.ttftMs >= 1000 ? `${(stats.ttftMs / 1000).toFixed(2)} s` : `${Math.round(stats.ttftMs)} ms`]);
  }
  if (stats.tokensPerSecond) parts.push(['Speed', `${stats.tokensPerSecond.toFixed(1)} tok/s`]);
  if (stats.promptTokens !== null && stats.promptTokens !== undefined) parts.push(['Prompt', `${stats.promptTokens} tok`]);
  if (stats.imageTokens) parts.push(['Images', `${stats.imageTokens} tok`]);
  if (stats.completionTokens !== null && stats.completionTokens !== undefined) parts.push(['Answer', `${stats.completionTokens} tok`]);
  return parts;
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

function userMessage(message, index, isLast, editing) {
  const li = el('li', 'message user');
  li.dataset.index = String(index);
  li.append(el('h3', 'visually-hidden', 'You said'));
  const bubble = el('div', 'bubble');
  if (message.preset && message.preset !== 'ask') bubble.append(el('span', 'chip', presetLabel(message.preset)));
  if (message.images && message.images.length) {
    const row = el('div', 'message-images');
    for (const id of message.images) {
      const image = getCachedImage(id);
      if (image) {
        row.append(thumbnail(image, 'message-image'));
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
  if (isLast && !editing) {
    const actions = el('div', 'message-actions');
    actions.append(actionButton('Edit', 'edit', index));
    li.append(actions);
  }
  return li;
}

// The image a grounding answer's boxes belong to: the last image of the question before it.
function groundingImage(messages, index) {
  for (let i = index - 1; i >= 0; i--) {
    const m = messages[i];
    if (m.role === 'user' && m.images && m.images.length) return getCachedImage(m.images[m.images.length - 1]);
  }
  return null;
}

export function fillAssistant(li, messages, index, isLast, busy) {
  const message = messages[index];
  li.replaceChildren();
  li.className = `message assistant ${message.state || 'done'}`;
  li.setAttribute('aria-busy', message.state === 'streaming' ? 'true' : 'false');
  li.dataset.chars = String(message.text.length);
  li.append(el('h3', 'visually-hidden', 'Answer'));
  const boxes = message.text ? parseBoxes(message.text) : [];
  if (boxes.length) {
    const image = groundingImage(messages, index);
    if (image) li.append(boxesFigure(image.dataUrl, boxes, `${image.name} with the objects found`));
  }
  const body = el('div', 'markdown');
  if (message.text) {
    renderInto(body, message.text);
  } else if (message.state === 'streaming') {
    body.append(el('p', 'waiting', 'Thinking…'));
  }
  if (message.text && !message.text.trim()) body.append(el('p', 'blank-note', `(${message.text.length} blank characters)`));
  li.append(body);
  if (message.state === 'stopped') li.append(el('p', 'state-note', 'Stopped.'));
  if (message.state === 'error') li.append(el('p', 'state-note', 'Interrupted.'));
  if (message.finish === 'length') li.append(el('p', 'state-note', 'Reached the max tokens limit.'));
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
    actions.append(actionButton('Copy', 'copy', index));
    if (isLast && !busy) actions.append(actionButton('Regenerate', 'regenerate', index));
    li.append(actions);
  }
}

export function renderMessages(list, messages, { busy, editingIndex }) {
  const items = messages.map((message, index) => {
    const isLast = index === messages.length - 1;
    if (message.role === 'user') {
      const lastUser = isLast || (index === messages.length - 2 && messages[index + 1].role === 'assistant');
      return userMessage(message, index, lastUser && !busy, editingIndex === index);
    }
    const li = el('li');
    li.dataset.index = String(index);
    fillAssistant(li, messages, index, isLast, busy);
    return li;
  });
  list.replaceChildren(...items);
}
