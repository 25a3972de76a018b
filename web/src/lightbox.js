// A full-window view of an image (or of a grounding figure with its boxes): a modal dialog, so
// focus stays inside and Escape closes it.
const $ = (id) => document.getElementById(id);

export function openLightbox(node, label) {
  const dialog = $('lightbox');
  const stage = $('lightbox-stage');
  const copy = node.cloneNode(true);
  for (const el of copy.querySelectorAll('[id]')) el.removeAttribute('id');
  stage.replaceChildren(copy);
  $('lightbox-title').textContent = label;
  dialog.showModal();
  $('lightbox-close').focus();
}

export function initLightbox() {
  const dialog = $('lightbox');
  $('lightbox-close').addEventListener('click', () => dialog.close());
  dialog.addEventListener('click', (e) => { if (e.target === dialog || e.target.id === 'lightbox-stage') dialog.close(); });
  dialog.addEventListener('close', () => $('lightbox-stage').replaceChildren());
}
