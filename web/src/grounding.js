// Qwen3-VL grounding answers: JSON like [{"bbox_2d": [x1, y1, x2, y2], "label": "cat"}], often
// inside a ```json block, with coordinates relative to the image on a 0..1000 scale.

const clamp = (v) => Math.min(1000, Math.max(0, v));

function toBox(item) {
  if (!item || typeof item !== 'object') return null;
  const point = item.point_2d;
  if (Array.isArray(point) && point.length === 2 && point.map(Number).every(Number.isFinite)) {
    const [x, y] = point.map((v) => clamp(Number(v)));
    return { x1: x, y1: y, x2: x, y2: y, label: typeof item.label === 'string' ? item.label.slice(0, 80) : '', point: true };
  }
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
  for (const match of text.matchAll(/\{[^{}]*?"(?:bbox|point)_2d"[^{}]*\}/g)) {
    const parsed = fromJson(match[0]);
    if (parsed) boxes.push(...parsed);
  }
  return boxes;
}

// Label colours with white text at 4.5:1 or more (WCAG AA for the 12px labels).
export const PALETTE = ['#be123c', '#1d4ed8', '#15803d', '#b45309', '#7e22ce', '#0e7490', '#be185d', '#4d7c0f'];

// A box in the image's pixels (the model's coordinates are 0..1000 of each side).
export function toPixels(box, width, height) {
  const px = (v, side) => Math.round((v / 1000) * side);
  return [px(box.x1, width), px(box.y1, height), px(box.x2, width), px(box.y2, height)];
}

export function boxesJson(boxes, image) {
  return JSON.stringify({
    image: { name: image.name, width: image.width, height: image.height },
    objects: boxes.map((b) => (b.point
      ? { label: b.label, point_2d: [b.x1, b.y1], point_px: toPixels(b, image.width, image.height).slice(0, 2) }
      : { label: b.label, bbox_2d: [b.x1, b.y1, b.x2, b.y2], bbox_px: toPixels(b, image.width, image.height) })),
  }, null, 2);
}

function colourMap(boxes) {
  const colours = new Map();
  for (const box of boxes) if (!colours.has(box.label)) colours.set(box.label, PALETTE[colours.size % PALETTE.length]);
  return colours;
}

function download(name, url) {
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
}

const baseName = (name) => (name || 'image').replace(/\.[^.]+$/, '');

// The image with its boxes drawn in, as a PNG data URL (the picture's own resolution).
export async function annotatedPng(image, boxes) {
  const img = new Image();
  img.src = image.dataUrl;
  await img.decode();
  const canvas = document.createElement('canvas');
  canvas.width = img.naturalWidth;
  canvas.height = img.naturalHeight;
  const ctx = canvas.getContext('2d');
  ctx.drawImage(img, 0, 0);
  const colours = colourMap(boxes);
  const line = Math.max(2, Math.round(canvas.width / 300));
  ctx.font = `bold ${Math.max(12, line * 6)}px sans-serif`;
  for (const box of boxes) {
    const [x1, y1, x2, y2] = toPixels(box, canvas.width, canvas.height);
    ctx.strokeStyle = ctx.fillStyle = colours.get(box.label);
    ctx.lineWidth = line;
    if (box.point) {
      ctx.beginPath();
      ctx.arc(x1, y1, line * 3, 0, 2 * Math.PI);
      ctx.fill();
    } else {
      ctx.strokeRect(x1, y1, x2 - x1, y2 - y1);
    }
    if (box.label) {
      const h = line * 8;
      const w = ctx.measureText(box.label).width + line * 4;
      const top = y1 - h >= 0 ? y1 - h : y1;
      ctx.fillRect(x1, top, w, h);
      ctx.fillStyle = '#ffffff';
      ctx.textBaseline = 'middle';
      ctx.fillText(box.label, x1 + line * 2, top + h / 2);
    }
  }
  return canvas.toDataURL('image/png');
}

function toolButton(label, onClick, pressed) {
  const button = document.createElement('button');
  button.type = 'button';
  button.className = 'link-button';
  button.textContent = label;
  if (pressed !== undefined) button.setAttribute('aria-pressed', String(pressed));
  button.addEventListener('click', onClick);
  return button;
}

// The grounding workspace: `image` with each box drawn over it (colours follow the labels), a
// list of the objects linked to their boxes (hover or focus highlights, click hides/shows),
// labels on/off, and downloads of the boxes (JSON, pixels and 0..1000) and of an annotated PNG.
export function boxesFigure(image, boxes, altText) {
  const figure = document.createElement('figure');
  figure.className = 'grounding';
  const frame = document.createElement('div');
  frame.className = 'grounding-frame';
  const img = document.createElement('img');
  img.src = image.dataUrl;
  img.alt = altText;
  frame.append(img);
  const colours = colourMap(boxes);
  const drawn = boxes.map((box, i) => {
    const el = document.createElement('div');
    el.className = box.point ? 'box point' : 'box';
    el.dataset.box = String(i);
    el.style.left = `${box.x1 / 10}%`;
    el.style.top = `${box.y1 / 10}%`;
    if (!box.point) {
      el.style.width = `${(box.x2 - box.x1) / 10}%`;
      el.style.height = `${(box.y2 - box.y1) / 10}%`;
    }
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
    return el;
  });
  const caption = document.createElement('figcaption');
  const counts = new Map();
  for (const box of boxes) counts.set(box.label || 'object', (counts.get(box.label || 'object') || 0) + 1);
  const summary = document.createElement('p');
  summary.className = 'grounding-summary';
  summary.textContent = `Found ${boxes.length} ${boxes.length === 1 ? 'object' : 'objects'}: ` +
    [...counts].map(([label, n]) => (n > 1 ? `${label} ×${n}` : label)).join(', ');
  const list = document.createElement('ol');
  list.className = 'object-list';
  boxes.forEach((box, i) => {
    const item = document.createElement('li');
    const button = document.createElement('button');
    button.type = 'button';
    button.className = 'object';
    button.setAttribute('aria-pressed', 'true');
    button.style.setProperty('--box-colour', colours.get(box.label));
    const [x1, y1, x2, y2] = toPixels(box, image.width, image.height);
    const where = box.point ? `(${x1}, ${y1})` : `(${x1}, ${y1})–(${x2}, ${y2}) px`;
    button.innerHTML = '<span class="swatch" aria-hidden="true"></span>';
    button.append(`${box.label || 'object'} `, Object.assign(document.createElement('span'), { className: 'coords', textContent: where }));
    button.title = 'Show or hide this box';
    const highlight = (on) => drawn[i].classList.toggle('highlight', on);
    button.addEventListener('mouseenter', () => highlight(true));
    button.addEventListener('mouseleave', () => highlight(false));
    button.addEventListener('focus', () => highlight(true));
    button.addEventListener('blur', () => highlight(false));
    button.addEventListener('click', () => {
      const shown = drawn[i].hidden;
      drawn[i].hidden = !shown;
      button.setAttribute('aria-pressed', String(shown));
    });
    item.append(button);
    list.append(item);
  });
  const tools = document.createElement('div');
  tools.className = 'grounding-tools';
  const labels = toolButton('Labels', () => {
    const on = !frame.classList.toggle('no-labels');
    labels.setAttribute('aria-pressed', String(on));
  }, true);
  tools.append(labels,
    toolButton('Download boxes (JSON)', () => {
      const url = URL.createObjectURL(new Blob([boxesJson(boxes, image)], { type: 'application/json' }));
      download(`${baseName(image.name)}-boxes.json`, url);
      setTimeout(() => URL.revokeObjectURL(url), 1000);
    }),
    toolButton('Download image with boxes (PNG)', async () => download(`${baseName(image.name)}-boxes.png`, await annotatedPng(image, boxes))));
  caption.append(summary, list, tools);
  figure.append(frame, caption);
  return figure;
}
