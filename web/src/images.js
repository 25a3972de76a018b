// Turning files the user adds into images the server accepts: checked, identified by content
// (so one image is never attached or sent twice), and shrunk in the browser when it is far
// larger than the model can use anyway.

// 64-bit FNV-1a over the bytes, as hex (crypto.subtle is missing on plain-http LAN origins).
export function contentHash(bytes) {
  let h1 = 0x811c9dc5;
  let h2 = 0x01000193 ^ bytes.length;
  for (let i = 0; i < bytes.length; i++) {
    h1 = Math.imul(h1 ^ bytes[i], 0x01000193);
    h2 = Math.imul(h2 ^ bytes[i] ^ (h1 >>> 13), 0x5bd1e995);
  }
  return (h1 >>> 0).toString(16).padStart(8, '0') + (h2 >>> 0).toString(16).padStart(8, '0') +
    bytes.length.toString(16);
}

export function readAsDataUrl(blob) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(reader.result);
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(blob);
  });
}

function decode(url) {
  return new Promise((resolve, reject) => {
    const img = new Image();
    img.onload = () => resolve(img);
    img.onerror = () => reject(new Error('not an image this browser can open'));
    img.src = url;
  });
}

// The formats the server decodes, by signature; anything else the browser can open (SVG,
// AVIF, ...) is re-encoded to PNG here. Animated WebP and RLE BMP are variants the server
// refuses, so they are re-encoded too.
const ascii = (bytes, at, n) => String.fromCharCode(...bytes.subarray(at, at + n));
export function serverFormat(bytes) {
  if (bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return 'JPEG';
  if (ascii(bytes, 0, 8) === '\x89PNG\r\n\x1a\n') return 'PNG';
  if (ascii(bytes, 0, 4) === 'GIF8') return 'GIF';
  if (ascii(bytes, 0, 4) === 'RIFF' && ascii(bytes, 8, 4) === 'WEBP') {
    const animated = ascii(bytes, 12, 4) === 'VP8X' && (bytes[20] & 0x02) !== 0;
    return animated ? null : 'WebP';
  }
  if (ascii(bytes, 0, 2) === 'BM') {
    const compression = bytes[30] | (bytes[31] << 8);
    return compression === 1 || compression === 2 ? null : 'BMP';
  }
  return null;
}

function formatName(file, bytes) {
  if (/^(ftyp)(heic|heix|hevc|mif1|msf1)/.test(ascii(bytes, 4, 8))) return 'HEIC';
  if (ascii(bytes, 4, 8) === 'ftypavif') return 'AVIF';
  const text = ascii(bytes, 0, 256);
  if (file.type === 'image/svg+xml' || /<svg[\s>]/.test(text)) return 'SVG';
  return (file.type || 'unknown').replace(/^image\//, '').toUpperCase();
}

// file -> { id, dataUrl, width, height, name, size, scaled, padded, converted, ... }.
// `limits`: { maxBytes, maxPixels, maxAspect }. Throws an Error whose message says why.
// `onStage(name)` hears 'decoding' and 'redrawing' as they start (large images take seconds).
export async function prepareImage(file, limits, onStage = () => {}) {
  if (file.type && !file.type.startsWith('image/')) throw new Error(`${file.name} is not an image`);
  const bytes = new Uint8Array(await file.arrayBuffer());
  const id = contentHash(bytes);
  const name = file.name || 'pasted image';
  const format = serverFormat(bytes);
  const objectUrl = URL.createObjectURL(file);
  try {
    let img;
    onStage('decoding');
    try {
      img = await decode(objectUrl);
    } catch {
      const what = formatName(file, bytes);
      throw new Error(what === 'HEIC' ? 'HEIC photos cannot be opened in this browser; export it as JPEG first'
        : `not an image this browser can open (${what})`);
    }
    // An SVG without a size has none of its own: give it a usual one.
    const width = img.naturalWidth || 300;
    const height = img.naturalHeight || 150;
    const pixels = width * height;
    const maxAspect = limits.maxAspect || 200;
    const aspect = Math.max(width, height) / Math.min(width, height);
    const tooBig = pixels > limits.maxPixels || bytes.length > limits.maxBytes;
    if (format && aspect <= maxAspect && !tooBig) {
      return { id, dataUrl: await readAsDataUrl(file), width, height, name, size: bytes.length, scaled: false };
    }
    // Redrawn: smaller when far above the model's largest budget (same aspect ratio), padded
    // (white, centred) when too long and thin for the model, as PNG when not a server format.
    onStage('redrawing');
    const scale = tooBig ? Math.min(1, Math.sqrt(limits.maxPixels / pixels)) : 1;
    const drawW = Math.max(1, Math.round(width * scale));
    const drawH = Math.max(1, Math.round(height * scale));
    const padded = aspect > maxAspect;
    const minSide = Math.max(Math.ceil(Math.max(drawW, drawH) / maxAspect), 32);
    const canvas = document.createElement('canvas');
    canvas.width = padded && drawW < drawH ? minSide : drawW;
    canvas.height = padded && drawH < drawW ? minSide : drawH;
    const ctx = canvas.getContext('2d');
    if (padded || !format) {
      ctx.fillStyle = '#ffffff';
      ctx.fillRect(0, 0, canvas.width, canvas.height);
    }
    ctx.imageSmoothingQuality = 'high';
    ctx.drawImage(img, Math.floor((canvas.width - drawW) / 2), Math.floor((canvas.height - drawH) / 2), drawW, drawH);
    const lossless = !format || padded || format === 'PNG' || format === 'GIF';
    let dataUrl = canvas.toDataURL(lossless ? 'image/png' : 'image/jpeg', 0.92);
    if (dataUrl.length * 0.75 > limits.maxBytes) dataUrl = canvas.toDataURL('image/jpeg', 0.85);
    return {
      id, dataUrl, width: canvas.width, height: canvas.height, name, size: Math.round(dataUrl.length * 0.75),
      scaled: scale < 1, padded, converted: format ? null : formatName(file, bytes),
      originalWidth: width, originalHeight: height,
    };
  } finally {
    URL.revokeObjectURL(objectUrl);
  }
}

// Files a DataTransfer (drop or paste) holds that the page may attach: images, videos, PDFs.
const attachable = (type) => !type || type.startsWith('image/') || type.startsWith('video/') || type === 'application/pdf';
export function attachableFiles(dataTransfer) {
  if (!dataTransfer) return [];
  const files = [...(dataTransfer.files || [])];
  if (files.length) return files.filter((f) => attachable(f.type));
  return [...(dataTransfer.items || [])]
    .filter((item) => item.kind === 'file' && attachable(item.type))
    .map((item) => item.getAsFile())
    .filter(Boolean);
}
