// Conversations out of and back into the browser: JSON with the images inside (data URLs), so
// the file alone restores everything, and Markdown to read or share.
import { newConversation } from './chat.js';
import { getCachedImage, loadImages, putImage } from './store.js';
import { promptFor, presetLabel } from './presets.js';

const FORMAT = 'qvl-conversation';

export async function conversationJson(conversation) {
  const ids = [...new Set(conversation.messages.flatMap((m) => m.images || []))];
  await loadImages(ids);
  const images = ids.map(getCachedImage).filter(Boolean)
    .map(({ id, name, width, height, dataUrl, detail }) => ({ id, name, width, height, dataUrl, detail }));
  const messages = conversation.messages.map(({ live, phase, phaseStarted, ...m }) => m);
  return JSON.stringify({ format: FORMAT, version: 1, title: conversation.title, created: conversation.created,
    updated: conversation.updated, messages, images }, null, 1);
}

export function conversationMarkdown(conversation) {
  const lines = [`# ${conversation.title || 'Conversation'}`, ''];
  for (const m of conversation.messages) {
    if (m.role === 'user') {
      const names = (m.images || []).map((id) => (getCachedImage(id) || {}).name || 'image');
      lines.push(`## You${m.preset && m.preset !== 'ask' ? ` (${presetLabel(m.preset)})` : ''}`, '');
      if (names.length) lines.push(names.map((n) => `[image: ${n}]`).join(' '), '');
      lines.push(m.text || promptFor(m.preset, ''), '');
      if (m.failed) lines.push(`*(refused by the server: ${m.failed.message})*`, '');
    } else {
      lines.push('## Answer', '');
      // A Thinking model's reasoning, quoted before the answer.
      if (m.reasoning) lines.push('*Thoughts:*', '', m.reasoning.split('\n').map((l) => `> ${l}`.trimEnd()).join('\n'), '');
      lines.push(m.preset === 'ocr' ? `\`\`\`text\n${m.text}\n\`\`\`` : m.text, '');
    }
  }
  return lines.join('\n');
}

// Reads an exported file; stores its images and returns a new conversation (never replaces one).
export async function importConversation(text) {
  let data;
  try { data = JSON.parse(text); } catch { throw new Error('the file is not JSON'); }
  if (!data || data.format !== FORMAT || !Array.isArray(data.messages)) throw new Error('the file is not a qvl conversation export');
  for (const image of data.images || []) {
    if (typeof image.id === 'string' && /^data:image\//.test(image.dataUrl || '')) {
      await putImage({ id: image.id, name: String(image.name || 'image'), width: Number(image.width) || 1,
        height: Number(image.height) || 1, dataUrl: image.dataUrl, detail: image.detail });
    }
  }
  const conversation = newConversation();
  conversation.title = String(data.title || 'Imported chat').slice(0, 80);
  conversation.messages = data.messages
    .filter((m) => m && (m.role === 'user' || m.role === 'assistant'))
    .map((m) => ({ ...m, text: String(m.text || ''), images: Array.isArray(m.images) ? m.images.filter((id) => typeof id === 'string') : undefined,
      state: m.role === 'assistant' && m.state === 'streaming' ? 'stopped' : m.state }));
  return conversation;
}
