// The composer's attachments. A tile appears the moment a file is added (pending, with a
// spinner, its name and size) and fills in when the image is ready (dimensions, token
// estimate) or when the server has previewed a video or document (media_tiles.js). Each
// attachment belongs to the conversation it was added in, so an image still being prepared can
// never ride along with a message elsewhere.
import { prepareImage } from './images.js';
import { prepareMedia } from './media.js';
import { mediaTile } from './media_tiles.js';
import { estimateImageTokens } from './tokens.js';
import { getCachedImage, putImage } from './store.js';
import { thumbnail } from './view.js';

let nextKey = 1;

export function formatBytes(n) {
  if (n >= 1 << 20) return `${(n / (1 << 20)).toFixed(1)} MB`;
  if (n >= 1024) return `${Math.round(n / 1024)} KB`;
  return `${n} B`;
}

export class Attachments {
  constructor() { this.entries = []; }

  of(conversationId) { return this.entries.filter((e) => e.conversation === conversationId); }

  hasPending(conversationId) { return this.of(conversationId).some((e) => e.status === 'pending'); }

  remove(key) { this.entries = this.entries.filter((e) => e.key !== key); }

  // Adds a file; `done(entry, error)` runs when it is ready or refused (then it is removed).
  add(file, conversationId, limits, done, progress = () => {}) {
    const entry = { key: nextKey++, conversation: conversationId, status: 'pending', stage: 'reading', name: file.name || 'pasted image', size: file.size, image: null, detail: null };
    this.entries.push(entry);
    const onStage = (stage) => {
      entry.stage = stage;
      if (this.entries.includes(entry)) progress(entry);
    };
    prepareImage(file, limits, onStage).then(async (image) => {
      if (!this.entries.includes(entry)) return;  // removed while it was being prepared
      if (this.of(conversationId).some((e) => e.image && e.image.id === image.id)) {
        this.remove(entry.key);
        done(entry, new Error(`${image.name} is attached already`), true);
        return;
      }
      await putImage(getCachedImage(image.id) || image);
      entry.image = getCachedImage(image.id);
      entry.status = 'ready';
      entry.prepared = image;
      done(entry, null);
    }, (error) => {
      this.remove(entry.key);
      done(entry, error);
    });
    return entry;
  }

  // Adds a video or document (kind from media.js): checked against the server's limits, then
  // previewed by the server; `done(entry, error, duplicate)` as for images.
  addMedia(file, kind, conversationId, props, apiKey, done) {
    const entry = { key: nextKey++, conversation: conversationId, kind, status: 'pending', stage: 'previewing', name: file.name || `pasted ${kind}`, size: file.size, image: null };
    this.entries.push(entry);
    prepareMedia(file, kind, props, apiKey).then(async (record) => {
      if (!this.entries.includes(entry)) return;
      if (this.of(conversationId).some((e) => e.image && e.image.id === record.id)) {
        this.remove(entry.key);
        done(entry, new Error(`${record.name} is attached already`), true);
        return;
      }
      await putImage(record);
      Object.assign(entry, { image: record, status: 'ready' });
      done(entry, null);
    }, (error) => {
      this.remove(entry.key);
      done(entry, error);
    });
    return entry;
  }

  // Puts images already stored (a refused question's) back in the composer.
  restore(conversationId, ids) {
    for (const id of ids) {
      const image = getCachedImage(id);
      if (!image || (image.kind && !image.dataUrl) || this.of(conversationId).some((e) => e.image && e.image.id === id)) continue;
      this.entries.push({ key: nextKey++, conversation: conversationId, kind: image.kind, status: 'ready', name: image.name, size: image.size || Math.round(image.dataUrl.length * 0.75), image, detail: image.detail || null });
    }
  }

  // The ready images of a conversation, taken out of the composer.
  take(conversationId) {
    const taken = this.of(conversationId).filter((e) => e.status === 'ready');
    this.entries = this.entries.filter((e) => !taken.includes(e));
    return taken;
  }
}

function detailSelect(entry, defaultDetail) {
  const select = document.createElement('select');
  select.className = 'tile-detail';
  select.dataset.detailKey = String(entry.key);
  select.setAttribute('aria-label', `Detail for ${entry.name}`);
  for (const [value, label] of [['auto', 'Auto'], ['low', 'Low'], ['high', 'High']]) {
    const option = document.createElement('option');
    option.value = value;
    option.textContent = label;
    select.append(option);
  }
  select.value = entry.detail || defaultDetail || 'auto';
  return select;
}

// Fills `list` with a tile per entry and `summary` with the total against the budget.
export function renderAttachments(list, summary, entries, props, defaultDetail) {
  const image = (props && props.image) || {};
  const ready = entries.filter((e) => e.status === 'ready' && !e.image.kind);
  const media = entries.filter((e) => e.image && e.image.kind);
  const mediaTokens = media.reduce((sum, e) => sum + (e.image.preview.video_tokens ?? e.image.preview.image_tokens ?? 0), 0);
  const tokens = estimateImageTokens(ready.map((e) => ({ width: e.image.width, height: e.image.height, detail: e.detail || defaultDetail })), image);
  const items = entries.map((entry) => {
    const li = document.createElement('li');
    li.className = `attachment ${entry.status}`;
    li.dataset.key = String(entry.key);
    const info = document.createElement('div');
    info.className = 'tile-info';
    const name = document.createElement('span');
    name.className = 'tile-name';
    name.textContent = entry.name;
    name.title = entry.name;
    const meta = document.createElement('span');
    meta.className = 'tile-meta';
    if (entry.image && entry.image.kind) {
      mediaTile(entry, li);
    } else if (entry.status === 'pending') {
      const spinner = document.createElement('span');
      spinner.className = 'spinner';
      spinner.setAttribute('aria-hidden', 'true');
      li.append(spinner);
      li.setAttribute('aria-busy', 'true');
      const stage = { reading: 'Reading', decoding: 'Decoding', redrawing: 'Resizing', previewing: 'Asking the server' }[entry.stage] || 'Preparing';
      meta.textContent = `${stage}… ${formatBytes(entry.size)}`;
      info.append(name, meta);
    } else {
      li.append(thumbnail(entry.image, 'attachment-thumb'));
      const n = tokens[ready.indexOf(entry)];
      meta.textContent = `${entry.image.width}×${entry.image.height} · ${formatBytes(entry.size)}`;
      const estimate = document.createElement('span');
      estimate.className = 'tile-tokens';
      estimate.dataset.tokens = String(n ?? '');
      estimate.textContent = n === null ? 'refused by the server' : `≈ ${n} tokens`;
      info.append(name, meta, estimate, detailSelect(entry, defaultDetail));
      const p = entry.prepared;
      if (p && (p.scaled || p.padded || p.converted)) {
        li.title = [p.converted && `converted from ${p.converted} to PNG`, p.scaled && `scaled from ${p.originalWidth}×${p.originalHeight}`,
          p.padded && `padded from ${p.originalWidth}×${p.originalHeight}`].filter(Boolean).join('; ');
      }
    }
    const remove = document.createElement('button');
    remove.type = 'button';
    remove.className = 'attachment-remove';
    remove.dataset.remove = String(entry.key);
    remove.setAttribute('aria-label', `Remove ${entry.name}`);
    remove.innerHTML = '<svg aria-hidden="true" viewBox="0 0 24 24"><path d="M7 7l10 10M17 7 7 17"/></svg>';
    li.append(info, remove);
    return li;
  });
  list.replaceChildren(...items);
  list.hidden = items.length === 0;
  const total = tokens.reduce((a, b) => a + (b || 0), 0);
  const budget = image.max_total_tokens;
  summary.hidden = ready.length + media.length === 0;
  summary.dataset.tokens = String(total);
  summary.dataset.mediaTokens = String(mediaTokens);
  summary.textContent = [ready.length ? `Images: ≈ ${total} tokens${budget ? ` of ${budget} per request` : ''}` : '',
    media.length ? `Videos and pages: ${mediaTokens} tokens` : ''].filter(Boolean).join(' · ');
  return total;
}
