// Conversations as data, and the chat request built from one.
//   conversation: { id, title, created, updated, messages: [message] }
//   user message: { role: 'user', text, preset, images: [imageId] }
//   assistant message: { role: 'assistant', text, state: 'done'|'stopped'|'error'|'streaming',
//                        stats: { ttftMs, tokensPerSecond, promptTokens, imageTokens,
//                                 completionTokens }, finish }
import { getCachedImage } from './store.js';
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

// Indexes of the user messages of the last `turns` turns before `current`, plus `current`.
function contextMessages(messages, current, turns) {
  const chosen = [];
  let userTurns = 0;
  for (let i = current - 1; i >= 0 && userTurns < turns; i--) {
    chosen.unshift(i);
    if (messages[i].role === 'user') userTurns += 1;
  }
  // A context never starts with a dangling assistant answer.
  while (chosen.length && messages[chosen[0]].role !== 'user') chosen.shift();
  chosen.push(current);
  return chosen;
}

const numberOrNull = (value) => (value === '' || value === null || value === undefined || !Number.isFinite(Number(value)) ? null : Number(value));

// The /v1/chat/completions body answering messages[current] (a user message).
export function buildRequest(conversation, current, settings, props) {
  const messages = conversation.messages;
  const turns = numberOrNull(settings.history) ?? 5;
  const indexes = contextMessages(messages, current, Math.max(0, Math.floor(turns)));
  const maxImages = (props && props.image && props.image.max_images_per_request) || 8;
  const detail = settings.detail || 'auto';

  // Each image is sent once, where it first appears; past the server's per-request limit the
  // oldest ones are left out (the current question's images always go).
  const firstUse = new Map();
  for (const i of indexes) {
    if (messages[i].role !== 'user') continue;
    for (const id of messages[i].images || []) if (!firstUse.has(id) && getCachedImage(id)) firstUse.set(id, i);
  }
  const needed = new Set(messages[current].images || []);
  let extra = firstUse.size - maxImages;
  for (const id of [...firstUse.keys()]) {
    if (extra <= 0) break;
    if (!needed.has(id)) { firstUse.delete(id); extra -= 1; }
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
    for (const id of message.images || []) {
      if (firstUse.get(id) !== i) continue;
      parts.push({ type: 'image_url', image_url: { url: getCachedImage(id).dataUrl, detail } });
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
