// Qwen3-VL grounding answers: JSON like [{"bbox_2d": [x1, y1, x2, y2], "label": "cat"}], often
// inside a ```json block, with coordinates relative to the image on a 0..1000 scale.

const clamp = (v) => Math.min(1000, Math.max(0, v));

function toBox(item) {
  if (!item || typeof item !== 'object') return null;
  const raw = item.bbox_2d ?? item.bbox ?? item.box;
  if (!Array.isArray(raw) || raw.length !== 4) return null;
  const n = raw.map(Number);
  if (!n.every(Number.isFinite)) return null;
  const [x1, x2] = [clamp(Math.min(n[0], n[2])), clamp(Math.max(n[0], n[2]))];
  const [y1, y2] = [clamp(Math.min(n[1], n[3])), clamp(Math.max(n[1], n[3]))];
  if (x2 - x1 <= 0 || y2 - y1 <= 0) return null;
  const label = typeof item.label === 'string' ? item.label.slice(0, 80) : '';
  return { x1, y1, x2, y2, label };
}

function fromJson(text) {
  try {
    const value = JSON.parse(text);
    const list = Array.isArray(value) ? value : [value];
    return list.map(toBox).filter(Boolean);
  } catch {
    return null;
  }
}

// Every box found in `text`, in order; [] when there are none. Tolerates a truncated answer
// (stopped or out of tokens) by falling back to a scan for the individual objects.
export function parseBoxes(text) {
  const fenced = /```(?:json)?\s*([\s\S]*?)(?:```|$)/i.exec(text);
  const candidates = [];
  if (fenced) candidates.push(fenced[1].trim());
  const start = text.search(/[[{]/);
  const end = Math.max(text.lastIndexOf(']'), text.lastIndexOf('}'));
  if (start >= 0 && end > start) candidates.push(text.slice(start, end + 1));
  for (const candidate of candidates) {
    const boxes = fromJson(candidate);
    if (boxes && boxes.length) return boxes;
  }
  const boxes = [];
  for (const match of text.matchAll(/\{[^{}]*?"bbox_2d"[^{}]*\}/g)) {
    const parsed = fromJson(match[0]);
    if (parsed) boxes.push(...parsed);
  }
  return boxes;
}

const PALETTE = ['#e11d48', '#2563eb', '#16a34a', '#d97706', '#9333ea', '#0891b2', '#db2777', '#65a30d'];

// A figure showing `src` with each box drawn over it, labelled; colours follow the labels.
export function boxesFigure(src, boxes, altText) {
  const figure = document.createElement('figure');
  figure.className = 'grounding';
  const frame = document.createElement('div');
  frame.className = 'grounding-frame';
  const img = document.createElement('img');
  img.src = src;
  img.alt = altText;
  frame.append(img);
  const colours = new Map();
  for (const box of boxes) {
    if (!colours.has(box.label)) colours.set(box.label, PALETTE[colours.size % PALETTE.length]);
    const el = document.createElement('div');
    el.className = 'box';
    el.style.left = `${box.x1 / 10}%`;
    el.style.top = `${box.y1 / 10}%`;
    el.style.width = `${(box.x2 - box.x1) / 10}%`;
    el.style.height = `${(box.y2 - box.y1) / 10}%`;
    el.style.setProperty('--box-colour', colours.get(box.label));
    if (box.label) {
      const tag = document.createElement('span');
      tag.className = 'box-label';
      tag.textContent = box.label;
      // The frame clips overflow: a label at the image's top edge goes inside its box.
      if (box.y1 < 50) tag.classList.add('inside');
      el.append(tag);
    }
    frame.append(el);
  }
  const caption = document.createElement('figcaption');
  const counts = new Map();
  for (const box of boxes) counts.set(box.label || 'object', (counts.get(box.label || 'object') || 0) + 1);
  caption.textContent = `Found ${boxes.length} ${boxes.length === 1 ? 'object' : 'objects'}: ` +
    [...counts].map(([label, n]) => (n > 1 ? `${label} ×${n}` : label)).join(', ');
  figure.append(frame, caption);
  return figure;
}
