// Videos and documents (PDF, TIFF) as attachments: recognised by their bytes, checked against
// the server's limits (GET /props) before any upload, previewed by the server itself
// (POST /v1/media/preview: sampled frames and timestamps, rendered pages, exact token counts),
// and sent as the content part the preview was made for.
import { contentHash, readAsDataUrl } from './images.js';
import { fetchPreview } from './api.js';

const ascii = (bytes, at, n) => String.fromCharCode(...bytes.subarray(at, at + n));

// 'video', 'document' or null (an image, or something else), by content first.
export function mediaKind(file, bytes) {
  if (ascii(bytes, 0, 1024).includes('%PDF-')) return 'document';
  const tiff = ascii(bytes, 0, 4);
  if (tiff === 'II*\0' || tiff === 'MM\0*') return 'document';
  if (ascii(bytes, 4, 4) === 'ftyp' && !/^(heic|heix|hevc|mif1|msf1|avif)/.test(ascii(bytes, 8, 4))) return 'video';
  if (bytes[0] === 0x1a && bytes[1] === 0x45 && bytes[2] === 0xdf && bytes[3] === 0xa3) return 'video';  // WebM, MKV
  const type = file.type || '';
  if (type.startsWith('video/')) return 'video';
  if (type === 'application/pdf' || type === 'image/tiff') return 'document';
  return null;
}

// The largest file of a kind the server takes: its own limit, and what fits the request body
// once base64 grows it by a third (with room for the rest of the request).
export function mediaByteLimit(kind, props) {
  const body = (props && props.max_body_bytes) || 32 << 20;
  const own = kind === 'video' ? props && props.video && props.video.max_video_bytes
    : props && props.document && props.document.max_document_bytes;
  return Math.min(own || Infinity, Math.floor((body - 64 * 1024) * 3 / 4));
}

const kindName = (kind) => (kind === 'video' ? 'video' : 'document');
const megabytes = (n) => `${(n / (1 << 20)).toFixed(1)} MB`;

// The settings a request sends with the part (empty values: the server's defaults).
export const defaultSettings = (kind) => (kind === 'video' ? { fps: '', max_frames: '', max_pixels: '' }
  : { pages: '', detail: 'auto', text: false });

// The content part for `record`; `pages` overrides the selection (one page of a per-page read).
export function mediaPart(record, pages) {
  const s = record.settings || {};
  if (record.kind === 'video') {
    const video = { url: record.dataUrl };
    for (const key of ['fps', 'max_frames', 'max_pixels']) if (s[key] !== '' && s[key] !== undefined) video[key] = Number(s[key]);
    return { type: 'video_url', video_url: video };
  }
  const file = { file_data: record.dataUrl, filename: record.name };
  const chosen = pages ?? s.pages;
  if (chosen) file.pages = String(chosen);
  if (s.detail && s.detail !== 'auto') file.detail = s.detail;
  if (s.text) file.text = true;
  return { type: 'file', file };
}

// Asks the server what the part becomes; the preview is kept on the record.
export async function refreshPreview(record, apiKey) {
  record.preview = await fetchPreview(mediaPart(record), apiKey);
  if (record.kind === 'document' && !record.allPages) record.allPages = record.preview.pages;
  return record;
}

// file -> { id, kind, name, size, dataUrl, settings, preview, allPages }. Throws an Error whose
// message says why the file cannot go (too large for the server, refused by its preview).
export async function prepareMedia(file, kind, props, apiKey) {
  const limit = mediaByteLimit(kind, props);
  const name = file.name || `pasted ${kindName(kind)}`;
  if (file.size > limit) {
    throw new Error(`${name} is ${megabytes(file.size)}; this server takes ${kindName(kind)}s up to ${megabytes(limit)}`);
  }
  const bytes = new Uint8Array(await file.arrayBuffer());
  let dataUrl = await readAsDataUrl(file);
  // The server reads the type from the bytes; an unknown browser type must not mislead it.
  if (kind === 'video' && !/^data:video\//.test(dataUrl)) dataUrl = dataUrl.replace(/^data:[^;,]*/, 'data:application/octet-stream');
  const record = { id: `m${contentHash(bytes)}`, kind, name, size: file.size, dataUrl, settings: defaultSettings(kind) };
  try {
    await refreshPreview(record, apiKey);
  } catch (error) {
    const pages = props && props.document && props.document.max_pages;
    // A document longer than the server reads at once: its first pages, the rest by range.
    if (kind !== 'document' || !pages || !/page/i.test(error.message)) throw error;
    record.settings.pages = `1-${pages}`;
    await refreshPreview(record, apiKey);
  }
  return record;
}

// Page numbers of a range text ("1-3, 5"); null when it does not parse.
export function parsePages(text, count) {
  const pages = new Set();
  for (const piece of String(text).split(',').map((p) => p.trim()).filter(Boolean)) {
    const m = /^(\d+)(?:\s*-\s*(\d+))?$/.exec(piece);
    if (!m) return null;
    const from = Number(m[1]);
    const to = m[2] ? Number(m[2]) : from;
    if (from < 1 || to < from || (count && to > count)) return null;
    for (let p = from; p <= to; p++) pages.add(p);
  }
  return [...pages].sort((a, b) => a - b);
}

// The shortest range text for sorted page numbers: [1, 2, 3, 5] -> "1-3,5".
export function pagesText(pages) {
  const out = [];
  for (let i = 0; i < pages.length; i++) {
    let j = i;
    while (j + 1 < pages.length && pages[j + 1] === pages[j] + 1) j++;
    out.push(j > i ? `${pages[i]}-${pages[j]}` : String(pages[i]));
    i = j;
  }
  return out.join(',');
}

// The chosen pages of a document record (all of them when none are chosen).
export function chosenPages(record) {
  const all = (record.allPages || []).map((p) => p.number);
  return record.settings.pages ? parsePages(record.settings.pages, record.preview && record.preview.page_count) || all : all;
}

// Seconds named in an answer: "<4.0 seconds>", "3.5 seconds", "3.5 s", "0:04", "1:02:03".
const TIME_PATTERN = /<?(\d+(?:\.\d+)?)\s*(?:seconds?|secs?|s)\b>?|\b(\d{1,2}):(\d{2})(?::(\d{2}))?\b/g;
export function findTimes(text) {
  const found = [];
  for (const m of text.matchAll(TIME_PATTERN)) {
    const seconds = m[1] !== undefined ? Number(m[1])
      : m[4] !== undefined ? Number(m[2]) * 3600 + Number(m[3]) * 60 + Number(m[4]) : Number(m[2]) * 60 + Number(m[3]);
    found.push({ index: m.index, length: m[0].length, text: m[0], seconds });
  }
  return found;
}

// The sampled frame nearest to `seconds` (by its pair's timestamp, as the prompt shows it).
export function nearestFrame(preview, seconds) {
  let best = null;
  for (const frame of (preview && preview.frames) || []) {
    if (!best || Math.abs(frame.timestamp - seconds) < Math.abs(best.timestamp - seconds)) best = frame;
  }
  return best;
}
