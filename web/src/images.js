// Turning files the user adds into images the server accepts: checked, identified by content
// (so one image is never attached or sent twice), and shrunk in the browser when it is far
// larger than the model can use anyway.

// 64-bit FNV-1a over the bytes, as hex (crypto.subtle is missing on plain-http LAN origins).
function contentHash(bytes) {
  let h1 = 0x811c9dc5;
  let h2 = 0x01000193 ^ bytes.length;
  for (let i = 0; i < bytes.length; i++) {
    h1 = Math.imul(h1 ^ bytes[i], 0x01000193);
    h2 = Math.imul(h2 ^ bytes[i] ^ (h1 >>> 13), 0x5bd1e995);
  }
  return (h1 >>> 0).toString(16).padStart(8, '0') + (h2 >>> 0).toString(16).padStart(8, '0') +
    bytes.length.toString(16);
}

function readAsDataUrl(blob) {
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

// file -> { id, dataUrl, width, height, name, scaled }. `limits`: { maxBytes, maxPixels }.
export async function prepareImage(file, limits) {
  if (file.type && !file.type.startsWith('image/')) throw new Error(`${file.name} is not an image`);
  const bytes = new Uint8Array(await file.arrayBuffer());
  const id = contentHash(bytes);
  const objectUrl = URL.createObjectURL(file);
  try {
    const img = await decode(objectUrl);
    const width = img.naturalWidth;
    const height = img.naturalHeight;
    const pixels = width * height;
    const name = file.name || 'pasted image';
    if (pixels <= limits.maxPixels && bytes.length <= limits.maxBytes) {
      return { id, dataUrl: await readAsDataUrl(file), width, height, name, scaled: false };
    }
    // Far above the model's largest budget: send a smaller copy (same aspect ratio).
    const scale = Math.min(1, Math.sqrt(limits.maxPixels / pixels));
    const canvas = document.createElement('canvas');
    canvas.width = Math.max(1, Math.round(width * scale));
    canvas.height = Math.max(1, Math.round(height * scale));
    const ctx = canvas.getContext('2d');
    ctx.imageSmoothingQuality = 'high';
    ctx.drawImage(img, 0, 0, canvas.width, canvas.height);
    const png = file.type === 'image/png' || file.type === 'image/gif';
    let dataUrl = canvas.toDataURL(png ? 'image/png' : 'image/jpeg', 0.92);
    if (dataUrl.length * 0.75 > limits.maxBytes) dataUrl = canvas.toDataURL('image/jpeg', 0.85);
    return { id, dataUrl, width: canvas.width, height: canvas.height, name, scaled: true, originalWidth: width, originalHeight: height };
  } finally {
    URL.revokeObjectURL(objectUrl);
  }
}

// Image files among a DataTransfer's items (drop or paste).
export function imageFiles(dataTransfer) {
  if (!dataTransfer) return [];
  const files = [...(dataTransfer.files || [])];
  if (files.length) return files.filter((f) => !f.type || f.type.startsWith('image/'));
  return [...(dataTransfer.items || [])]
    .filter((item) => item.kind === 'file' && item.type.startsWith('image/'))
    .map((item) => item.getAsFile())
    .filter(Boolean);
}
