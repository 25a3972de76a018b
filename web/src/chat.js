// Conversations as data, and the chat request built from one.
//   conversation: { id, title, created, updated, messages: [message] }
//   user message: { role: 'user', text, preset, images: [imageId] } (ids of videos and
//                 documents too: media.js records, sent with their own question)
//   assistant message: { role: 'assistant', text, state: 'done'|'stopped'|'error'|'streaming',
//                        stats: { ttftMs, tokensPerSecond, promptTokens, imageTokens,
//                                 completionTokens }, finish }
import { getCachedImage } from './store.js';
import { mediaPart } from './media.js';
import { presetSampling, promptFor, presetLabel } from './presets.js';

export function newConversation() {
  const now = Date.now();
  return { id: `c${now.toString(36)}${Math.random().toString(36).slice(2, 8)}`, title: '', created: now, updated: now, messages: [] };
}

export function titleFor(message) {
  const text = message.text.trim().replace(/\s+/g, ' ');
  if (message.preset && message.preset !== 'ask') {
    return text ? `${presetLabel(message.preset)}: ${text}`.slice(0, 60) : presetLabel(message.preset);
  }
  return text.slice(0, 60) || (message.images.length ? 'Image question' : 'New chat');
}

// A user turn the server refused (4xx) stays in the thread, marked, but is never sent again.
const isLive = (message) => !(message.role === 'user' && message.failed);

// Indexes of the live messages of the last `turns` turns before `current`, plus `current`.
function contextMessages(messages, current, turns) {
  const chosen = [];
  let userTurns = 0;
  for (let i = current - 1; i >= 0 && userTurns < turns; i--) {
    if (!isLive(messages[i])) continue;
    chosen.unshift(i);
    if (messages[i].role === 'user') userTurns += 1;
  }
  // A context never starts with a dangling assistant answer.
  while (chosen.length && messages[chosen[0]].role !== 'user') chosen.shift();
  chosen.push(current);
  return chosen;
}

const numberOrNull = (value) => (value === '' || value === null || value === undefined || !Number.isFinite(Number(value)) ? null : Number(value));

// What the request answering messages[current] carries:
//   indexes: the messages sent (the history setting counts turns of text);
//   sendAt:  image id -> index of the message it is sent with. Images stay in context however
//            old their turn is: an image from before the history window rides with the window's
//            first question. Each image is sent once.
//   dropped: images of the conversation the model does not see (past the per-request limit,
//            the oldest first; the current question's images always go).
export function contextPlan(messages, current, settings, props) {
  const turns = numberOrNull(settings.history) ?? 5;
  const indexes = contextMessages(messages, current, Math.max(0, Math.floor(turns)));
  const maxImages = (props && props.image && props.image.max_images_per_request) || 8;
  const firstUse = new Map();
  const lastUse = new Map();
  const all = new Set();
  for (let i = 0; i <= current && i < messages.length; i++) {
    const m = messages[i];
    if (m.role !== 'user') continue;
    for (const id of m.images || []) {
      const image = getCachedImage(id);
      if (!isLive(m) || !image || image.kind) continue;
      all.add(id);
      if (!firstUse.has(id)) firstUse.set(id, i);
      lastUse.set(id, i);
    }
  }
  const needed = new Set((messages[current] && messages[current].images) || []);
  const kept = [...firstUse.keys()].sort((a, b) => (needed.has(b) - needed.has(a)) || (lastUse.get(b) - lastUse.get(a)))
    .slice(0, Math.max(maxImages, needed.size));
  const keptSet = new Set(kept);
  const sendAt = new Map();
  // Sent with its first question inside the window, else with the window's first question.
  for (const i of indexes) {
    if (messages[i].role !== 'user') continue;
    for (const id of messages[i].images || []) if (keptSet.has(id) && !sendAt.has(id)) sendAt.set(id, i);
  }
  for (const id of kept) if (!sendAt.has(id)) sendAt.set(id, indexes[0]);
  const dropped = new Set([...all].filter((id) => !sendAt.has(id)));
  return { indexes, sendAt, dropped };
}

// The /v1/chat/completions body answering messages[current] (a user message).
export function buildRequest(conversation, current, settings, props) {
  const messages = conversation.messages;
  const { indexes, sendAt } = contextPlan(messages, current, settings, props);
  const detail = settings.detail || 'auto';
  const imagesAt = new Map();
  for (const [id, i] of [...sendAt].sort((a, b) => a[1] - b[1])) {
    if (!imagesAt.has(i)) imagesAt.set(i, []);
    imagesAt.get(i).push(id);
  }
  // Carried images keep their conversation order: oldest first.
  for (const ids of imagesAt.values()) {
    const order = (id) => messages.findIndex((m) => m.role === 'user' && (m.images || []).includes(id));
    ids.sort((a, b) => order(a) - order(b));
  }

  const out = [];
  const system = (settings.system || '').trim();
  if (system) out.push({ role: 'system', content: system });
  for (const i of indexes) {
    const message = messages[i];
    if (message.role === 'assistant') {
      if (message.text) out.push({ role: 'assistant', content: message.text });
      continue;
    }
    const text = promptFor(message.preset, message.text);
    const parts = [];
    // Videos and documents go with their own question while it is in the history window (and
    // while the tab still holds their bytes: store.js).
    for (const id of message.images || []) {
      const record = getCachedImage(id);
      if (record && record.kind && record.dataUrl) parts.push(mediaPart(record));
    }
    for (const id of imagesAt.get(i) || []) {
      const image = getCachedImage(id);
      parts.push({ type: 'image_url', image_url: { url: image.dataUrl, detail: image.detail || detail } });
    }
    if (!parts.length) {
      out.push({ role: 'user', content: text });
    } else {
      if (text) parts.push({ type: 'text', text });
      out.push({ role: 'user', content: parts });
    }
  }

  const body = { model: (props && props.model) || 'qvl', messages: out };
  const fields = [['temperature', 'temperature'], ['top_p', 'top_p'], ['top_k', 'top_k'], ['max_tokens', 'max_tokens'], ['seed', 'seed']];
  for (const [key, field] of fields) {
    const value = numberOrNull(settings[key]);
    if (value !== null) body[field] = value;
  }
  return { ...body, ...presetSampling(messages[current].preset) };
}

// Stats shown under an answer, from the server's usage/timings (client timing as fallback).
export function statsFrom(result) {
  const t = result.timings || {};
  const u = result.usage || {};
  return {
    ttftMs: t.ttft_ms ?? result.clientTtftMs ?? null,
    tokensPerSecond: t.completion_tokens_per_second ?? null,
    promptTokens: u.prompt_tokens ?? t.prompt_tokens ?? null,
    imageTokens: t.image_tokens ?? null,
    completionTokens: u.completion_tokens ?? t.completion_tokens ?? null,
  };
}
