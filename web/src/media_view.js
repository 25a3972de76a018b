// Videos and documents in the conversation: a question's video as its strip of sampled frames,
// a document as its chosen pages; times an answer names ("at 3.5 seconds", "0:04",
// "<4.0 seconds>") become links to the nearest sampled frame; a page-by-page reading
// (page_ocr.js) shows each page's thumbnail beside its text.
import { chosenPages, findTimes, nearestFrame } from './media.js';
import { frameStrip } from './media_tiles.js';
import { renderInto } from './markdown.js';

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

// A question's video or document.
export function mediaCard(record) {
  const card = el('div', `media-card ${record.kind}`);
  card.append(el('span', 'media-name', record.name));
  if (record.kind === 'video') {
    card.append(el('span', 'media-meta', `${record.preview.sampled_frames} frames · ${record.preview.video_tokens} video tokens`));
    card.append(frameStrip(record.preview, 'frame-strip small'));
  } else {
    const pages = chosenPages(record);
    card.append(el('span', 'media-meta', `${pages.length} of ${record.preview.page_count} pages · ${record.preview.image_tokens} tokens`));
    const strip = el('ul', 'page-strip small');
    const thumbs = new Map((record.allPages || []).map((p) => [p.number, p.thumbnail]));
    for (const number of pages) {
      const item = el('li', 'page-thumb');
      if (thumbs.has(number)) {
        const img = el('img');
        img.src = thumbs.get(number);
        img.alt = `page ${number}`;
        item.append(img);
      }
      item.append(el('span', 'page-number', String(number)));
      strip.append(item);
    }
    card.append(strip);
  }
  if (!record.dataUrl) card.append(el('span', 'media-meta', 'Not stored in the browser: attach it again to ask more about it.'));
  return card;
}

// Wraps the times named in `root`'s text (outside code) in buttons that open the nearest frame.
export function linkTimes(root, record) {
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {
    acceptNode: (node) => (node.parentElement.closest('code, pre, a, button') ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT),
  });
  const nodes = [];
  while (walker.nextNode()) nodes.push(walker.currentNode);
  for (const node of nodes) {
    const times = findTimes(node.textContent);
    if (!times.length) continue;
    const fragment = document.createDocumentFragment();
    let at = 0;
    for (const time of times) {
      const frame = nearestFrame(record.preview, time.seconds);
      if (!frame) continue;
      fragment.append(node.textContent.slice(at, time.index));
      const button = el('button', 'time-link', time.text);
      button.type = 'button';
      button.dataset.action = 'time';
      button.dataset.media = record.id;
      button.dataset.seconds = String(time.seconds);
      button.title = `Show the frame at ${frame.timestamp.toFixed(1)} s`;
      fragment.append(button);
      at = time.index + time.length;
    }
    fragment.append(node.textContent.slice(at));
    node.replaceWith(fragment);
  }
}

// The lightbox content for a time link: the nearest sampled frame, with its timestamp.
export function frameFigure(record, seconds) {
  const frame = nearestFrame(record.preview, seconds);
  const figure = el('figure', 'frame-figure');
  figure.dataset.timestamp = String(frame.timestamp);
  const img = el('img');
  img.src = frame.thumbnail;
  img.alt = `${record.name}, frame ${frame.index}`;
  figure.append(img, el('figcaption', '', `${record.name} · frame ${frame.index} · ${frame.timestamp_text.replace(/[<>]/g, '')}`));
  return { figure, frame };
}

function action(label, name, index) {
  const button = el('button', 'link-button', label);
  button.type = 'button';
  button.dataset.action = name;
  button.dataset.index = String(index);
  return button;
}

// The answer's body: the download bar, then a row per page (thumbnail, text).
export function pagesBody(message, index, record) {
  const body = el('div', 'ocr-pages');
  const bar = el('div', 'ocr-bar');
  bar.append(el('span', 'ocr-label', `Text of ${message.pages.length} ${message.pages.length === 1 ? 'page' : 'pages'}, one request each`),
    action('Download .txt', 'pages-txt', index), action('Download .md', 'pages-md', index), action('Download .json', 'pages-json', index));
  body.append(bar);
  const thumbs = new Map(((record && record.allPages) || []).map((p) => [p.number, p.thumbnail]));
  const list = el('ol', 'ocr-page-list');
  for (const page of message.pages) {
    const item = el('li', `ocr-page ${page.state}`);
    item.dataset.page = String(page.page);
    item.dataset.state = page.state;
    const figure = el('figure', 'ocr-page-figure');
    if (thumbs.has(page.page)) {
      const img = el('img');
      img.src = thumbs.get(page.page);
      img.alt = `page ${page.page}`;
      figure.append(img);
    }
    figure.append(el('figcaption', '', `Page ${page.page}`));
    const text = el('div', 'ocr-page-text markdown');
    if (page.state === 'streaming' || page.state === 'waiting') text.append(el('pre', 'ocr-text', page.text || (page.state === 'waiting' ? 'Waiting…' : 'Reading…')));
    else renderInto(text, page.text);
    item.append(figure, text);
    list.append(item);
  }
  body.append(list);
  return body;
}
