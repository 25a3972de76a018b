// Composer tiles of videos and documents: a video's poster and its strip of sampled frames with
// the timestamps the model will see, a document's page thumbnails to choose from; each with its
// per-request settings and the server's own token count (POST /v1/media/preview). A change of
// settings asks the server again.
import { chosenPages, pagesText, parsePages, refreshPreview } from './media.js';

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function thumb(src, alt, className) {
  const img = el('img', className);
  img.src = src;
  img.alt = alt;
  img.decoding = 'async';
  return img;
}

const seconds = (s) => `${Number(s).toFixed(1)} s`;

function field(entry, key, label, attrs) {
  const wrap = el('label', 'media-field');
  const input = el('input');
  Object.assign(input, attrs);
  input.dataset.mediaKey = String(entry.key);
  input.dataset.setting = key;
  input.value = entry.image.settings[key] ?? '';
  wrap.append(el('span', '', label), input);
  return wrap;
}

// A video's strip: every sampled frame with the timestamp of its pair.
export function frameStrip(preview, className = 'frame-strip') {
  const strip = el('ol', className);
  strip.setAttribute('aria-label', 'Sampled frames');
  for (const frame of preview.frames) {
    const item = el('li', 'frame');
    item.dataset.timestamp = String(frame.timestamp);
    item.append(thumb(frame.thumbnail, `frame ${frame.index} at ${seconds(frame.timestamp)}`), el('span', 'frame-time', seconds(frame.timestamp)));
    strip.append(item);
  }
  return strip;
}

function videoTile(entry, li, info) {
  const { preview } = entry.image;
  li.append(thumb(preview.frames[0].thumbnail, `${entry.name} (first sampled frame)`, 'attachment-thumb'));
  const source = preview.source || {};
  const meta = [preview.duration ? seconds(preview.duration) : null, `${preview.sampled_frames} frames`, source.codec].filter(Boolean).join(' · ');
  info.append(el('span', 'tile-meta', meta));
  const tokens = el('span', 'tile-tokens', `${preview.video_tokens} video tokens`);
  tokens.dataset.tokens = String(preview.video_tokens);
  info.append(tokens);
  const settings = el('details', 'media-settings');
  settings.open = !!entry.settingsOpen;  // re-rendering must not close it under the user
  settings.dataset.mediaKey = String(entry.key);
  settings.append(el('summary', '', 'Video settings'),
    field(entry, 'fps', 'Frames per second', { type: 'number', min: '0.1', step: '0.1', placeholder: 'server default' }),
    field(entry, 'max_frames', 'Max frames', { type: 'number', min: '2', step: '1', placeholder: 'server default' }),
    field(entry, 'max_pixels', 'Max pixels (all frames)', { type: 'number', min: '4096', step: '1024', placeholder: 'server default' }));
  info.append(settings);
  return frameStrip(preview);
}

function documentTile(entry, li, info) {
  const record = entry.image;
  const { preview, allPages } = record;
  li.append(thumb(allPages[0].thumbnail, `${entry.name} page ${allPages[0].number}`, 'attachment-thumb'));
  const chosen = new Set(chosenPages(record));
  info.append(el('span', 'tile-meta', `${preview.page_count} ${preview.page_count === 1 ? 'page' : 'pages'} · ${chosen.size} chosen`));
  const tokens = el('span', 'tile-tokens', `${preview.image_tokens} tokens for ${preview.pages.length} ${preview.pages.length === 1 ? 'page' : 'pages'}`);
  tokens.dataset.tokens = String(preview.image_tokens);
  info.append(tokens);
  const controls = el('div', 'media-controls');
  controls.append(field(entry, 'pages', 'Pages', { type: 'text', placeholder: `all (1-${preview.page_count})`, inputMode: 'numeric' }));
  const detail = el('select', 'tile-detail');
  detail.dataset.mediaKey = String(entry.key);
  detail.dataset.setting = 'detail';
  detail.setAttribute('aria-label', `Page budget for ${entry.name}`);
  for (const [value, label] of [['auto', 'Pages: auto'], ['low', 'Pages: low'], ['high', 'Pages: high']]) {
    const option = el('option', '', label);
    option.value = value;
    detail.append(option);
  }
  detail.value = record.settings.detail || 'auto';
  const text = el('label', 'media-check');
  const box = el('input');
  box.type = 'checkbox';
  box.checked = !!record.settings.text;
  box.dataset.mediaKey = String(entry.key);
  box.dataset.setting = 'text';
  text.append(box, el('span', '', 'Text layer'));
  const read = el('button', 'button small', 'Read each page');
  read.type = 'button';
  read.dataset.readPages = String(entry.key);
  read.title = 'One OCR answer per chosen page, with its thumbnail';
  controls.append(detail, text, read);
  info.append(controls);
  const strip = el('ul', 'page-strip');
  strip.setAttribute('aria-label', `Pages of ${entry.name}`);
  const tokensOf = new Map(preview.pages.map((p) => [p.number, p.tokens]));
  for (const page of allPages) {
    const item = el('li');
    const button = el('button', 'page-thumb');
    button.type = 'button';
    button.dataset.mediaKey = String(entry.key);
    button.dataset.page = String(page.number);
    button.setAttribute('aria-pressed', String(chosen.has(page.number)));
    button.setAttribute('aria-label', `Page ${page.number}${tokensOf.has(page.number) ? `, ${tokensOf.get(page.number)} tokens` : ''}`);
    button.append(thumb(page.thumbnail, '', ''), el('span', 'page-number', String(page.number)));
    item.append(button);
    strip.append(item);
  }
  return strip;
}

// The tile of a ready video or document entry (the remove button is added by the caller).
export function mediaTile(entry, li) {
  li.classList.add('media', entry.image.kind);
  const info = el('div', 'tile-info');
  const name = el('span', 'tile-name', entry.name);
  name.title = entry.name;
  info.append(name);
  const strip = entry.image.kind === 'video' ? videoTile(entry, li, info) : documentTile(entry, li, info);
  if (entry.updating) info.append(el('span', 'tile-meta', 'Updating…'));
  if (entry.error) info.append(el('span', 'tile-error', entry.error));
  li.append(info, strip);
}

// Setting changes and page clicks on media tiles: the record changes, the server previews it
// again. `app`: { find(key), apiKey(), render(), readPages(entry) }.
export function wireMediaTiles(list, app) {
  // Re-rendering replaces the tile: the control used keeps the focus (keyboard users).
  const render = (focus) => {
    app.render();
    if (focus) list.querySelector(focus)?.focus();
  };
  async function update(entry, change, focus) {
    const before = { ...entry.image.settings };
    change(entry.image.settings);
    entry.updating = true;
    entry.status = 'pending';  // not sent while its preview is out of date
    entry.error = null;
    render(focus);
    try {
      await refreshPreview(entry.image, app.apiKey());
    } catch (error) {
      entry.image.settings = before;
      entry.error = error.message;
      await refreshPreview(entry.image, app.apiKey()).catch(() => {});
    }
    entry.updating = false;
    entry.status = 'ready';
    render(focus && list.contains(document.activeElement) ? focus : null);
  }
  list.addEventListener('toggle', (e) => {  // toggle does not bubble: caught on its way down
    const entry = e.target.matches('details.media-settings') && app.find(Number(e.target.dataset.mediaKey));
    if (entry) entry.settingsOpen = e.target.open;
  }, true);
  list.addEventListener('change', (e) => {
    const key = e.target.dataset.mediaKey;
    const entry = key && app.find(Number(key));
    if (!entry) return;
    const setting = e.target.dataset.setting;
    const value = e.target.type === 'checkbox' ? e.target.checked : e.target.value.trim();
    const focus = `[data-media-key="${key}"][data-setting="${setting}"]`;
    if (setting === 'pages' && value && !parsePages(value, entry.image.preview.page_count)) {
      entry.error = `“${value}” is not a page range of 1-${entry.image.preview.page_count} (e.g. 1-3,5)`;
      render(focus);
      return;
    }
    update(entry, (s) => { s[setting] = value; }, focus);
  });
  list.addEventListener('click', (e) => {
    const read = e.target.closest('[data-read-pages]');
    if (read) {
      const entry = app.find(Number(read.dataset.readPages));
      if (entry) app.readPages(entry);
      return;
    }
    const button = e.target.closest('.page-thumb');
    const entry = button && app.find(Number(button.dataset.mediaKey));
    if (!entry) return;
    const page = Number(button.dataset.page);
    const chosen = new Set(chosenPages(entry.image));
    if (chosen.has(page)) chosen.delete(page); else chosen.add(page);
    if (!chosen.size) return;  // a document sends at least one page
    const all = entry.image.allPages.length === chosen.size && entry.image.preview.page_count === chosen.size;
    update(entry, (s) => { s.pages = all ? '' : pagesText([...chosen].sort((a, b) => a - b)); },
      `.page-thumb[data-media-key="${button.dataset.mediaKey}"][data-page="${page}"]`);
  });
}
