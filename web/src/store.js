// What survives a reload: conversations and settings in localStorage, image bytes in
// IndexedDB (keyed by content hash, so an image is stored once however often it is used).
// Videos and documents keep only their preview there (name, size, settings, the sampled
// frames' or pages' thumbnails and timestamps, a few KB each): their bytes (up to the server's
// limit, tens of MB) live as long as the tab, so after a reload a conversation shows them but
// sends them no more. Without IndexedDB, images live only as long as the tab.

const CONVERSATIONS_KEY = 'qvl.conversations.v1';
const SETTINGS_KEY = 'qvl.settings.v1';
const MAX_CONVERSATIONS = 200;

function readJson(key, fallback) {
  try {
    const text = localStorage.getItem(key);
    return text ? JSON.parse(text) : fallback;
  } catch {
    return fallback;
  }
}

export function loadConversations() {
  const list = readJson(CONVERSATIONS_KEY, []);
  return Array.isArray(list) ? list.filter((c) => c && c.id && Array.isArray(c.messages)) : [];
}

// Saves, dropping the oldest conversations when the browser's quota is full. Returns how many
// had to be dropped.
export function saveConversations(list) {
  let kept = [...list].sort((a, b) => b.updated - a.updated).slice(0, MAX_CONVERSATIONS);
  let dropped = list.length - kept.length;
  for (;;) {
    try {
      localStorage.setItem(CONVERSATIONS_KEY, JSON.stringify(kept));
      return dropped;
    } catch {
      if (kept.length <= 1) return dropped;
      kept = kept.slice(0, -1);
      dropped += 1;
    }
  }
}

export function loadSettings() {
  const value = readJson(SETTINGS_KEY, {});
  return value && typeof value === 'object' ? value : {};
}

export function saveSettings(settings) {
  try { localStorage.setItem(SETTINGS_KEY, JSON.stringify(settings)); } catch { /* quota */ }
}

let dbPromise = null;
function openDb() {
  if (!dbPromise) {
    dbPromise = new Promise((resolve) => {
      try {
        const request = indexedDB.open('qvl', 1);
        request.onupgradeneeded = () => request.result.createObjectStore('images', { keyPath: 'id' });
        request.onsuccess = () => resolve(request.result);
        request.onerror = () => resolve(null);
      } catch {
        resolve(null);
      }
    });
  }
  return dbPromise;
}

const memoryImages = new Map();

export function getCachedImage(id) {
  return memoryImages.get(id) || null;
}

// image: { id, dataUrl, width, height, name }, or a video or document (media.js: kind set).
export async function putImage(image) {
  memoryImages.set(image.id, image);
  const db = await openDb();
  if (!db) return;
  await new Promise((resolve) => {
    const tx = db.transaction('images', 'readwrite');
    tx.objectStore('images').put(image.kind ? { ...image, dataUrl: null } : image);
    tx.oncomplete = tx.onerror = tx.onabort = () => resolve();
  });
}

export async function loadImages(ids) {
  const missing = ids.filter((id) => !memoryImages.has(id));
  const db = missing.length ? await openDb() : null;
  if (db) {
    await new Promise((resolve) => {
      const tx = db.transaction('images', 'readonly');
      const store = tx.objectStore('images');
      for (const id of missing) {
        const request = store.get(id);
        // The tab may hold a video's bytes already (attached again): never replace them.
        request.onsuccess = () => { if (request.result && !memoryImages.has(id)) memoryImages.set(id, request.result); };
      }
      tx.oncomplete = tx.onerror = tx.onabort = () => resolve();
    });
  }
}

// Removes stored images no conversation refers to any more.
export async function pruneImages(usedIds) {
  for (const id of [...memoryImages.keys()]) if (!usedIds.has(id)) memoryImages.delete(id);
  const db = await openDb();
  if (!db) return;
  const tx = db.transaction('images', 'readwrite');
  const store = tx.objectStore('images');
  const request = store.getAllKeys();
  request.onsuccess = () => {
    for (const id of request.result) if (!usedIds.has(id)) store.delete(id);
  };
}
