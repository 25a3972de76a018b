// The page's controls: message actions (copy, edit, OCR view, grounding image, lightbox),
// presets, the composer's inputs (keys, files, paste, drop), the conversation list, export and
// import, and the keyboard (Escape stops an answer or closes the drawer).
import { attachableFiles } from './images.js';
import { PRESETS } from './presets.js';
import { getCachedImage, pruneImages } from './store.js';
import { titleFor } from './chat.js';
import { openLightbox } from './lightbox.js';
import { setDrawer } from './sidebar.js';
import { openSettings } from './settings.js';
import { copyText, downloadText } from './clipboard.js';
import { conversationJson, conversationMarkdown, importConversation } from './export.js';
import { frameFigure } from './media_view.js';
import { pagesJson, pagesMarkdown, pagesText } from './page_ocr.js';

const $ = (id) => document.getElementById(id);

export function wireControls(app) {
  const { state, ui, busy, send, stopGenerating, addFiles, persist, renderConversation, renderComposer,
    retryLast, generate, openConversation, startNewConversation, deleteConversation, hideError,
    usedImageIds, closeSidebar, autoGrow, notice, drawSidebar, continueAnswer } = app;

  // ---- message actions ---------------------------------------------------------------------
  function onMessageAction(event) {
    const zoom = event.target.closest('[data-zoom]');
    if (zoom) {
      const image = getCachedImage(zoom.dataset.zoom);
      if (image) openLightbox(zoom.querySelector('img'), image.name);
      return;
    }
    const time = event.target.closest('[data-action="time"]');
    if (time) {
      const record = getCachedImage(time.dataset.media);
      if (record) {
        const { figure, frame: shown } = frameFigure(record, Number(time.dataset.seconds));
        openLightbox(figure, `${record.name} at ${shown.timestamp.toFixed(1)} s`);
      }
      return;
    }
    const frame = event.target.closest('.grounding-frame');
    if (frame) return openLightbox(frame, frame.querySelector('img').alt);
    const button = event.target.closest('button');
    if (!button) return;
    const messages = state.current.messages;
    if (button.dataset.copyCode !== undefined) {
      const code = button.closest('.code-block').querySelector('code');
      copyText(code ? code.textContent : '', button);
      return;
    }
    const index = Number(button.dataset.index);
    switch (button.dataset.action) {
      case 'copy': copyText(messages[index].text, button); break;
      case 'download-text': downloadText(`${(state.current.title || 'text').slice(0, 40)}.txt`, messages[index].text); break;
      case 'download-md': downloadText(`${(state.current.title || 'text').slice(0, 40)}.md`, messages[index].text, 'text/markdown'); break;
      case 'pages-txt':
      case 'pages-md':
      case 'pages-json': {
        const answer = messages[index];
        const name = (getCachedImage(answer.document) || {}).name || 'document';
        const base = name.replace(/\.[^.]+$/, '');
        if (button.dataset.action === 'pages-txt') downloadText(`${base}.txt`, pagesText(answer));
        else if (button.dataset.action === 'pages-md') downloadText(`${base}.md`, pagesMarkdown(answer, name), 'text/markdown');
        else downloadText(`${base}.json`, pagesJson(answer), 'application/json');
        break;
      }
      case 'ocr-side':
        messages[index].side = !messages[index].side;
        persist();
        renderConversation();
        ui.messageList.querySelector(`li[data-index="${index}"] [data-action="ocr-side"]`)?.focus();
        break;
      case 'ocr-toggle':
        messages[index].rendered = !messages[index].rendered;
        persist();
        renderConversation();
        ui.messageList.querySelector(`li[data-index="${index}"] [data-action="ocr-toggle"]`)?.focus();
        break;
      case 'ground-on':
        messages[index].groundOn = button.dataset.image;
        persist();
        renderConversation();
        break;
      case 'continue': continueAnswer(messages[index]); break;
      case 'version': {
        const m = messages[index];
        const i = m.version + Number(button.dataset.step);
        if (!m.versions || i < 0 || i >= m.versions.length) break;
        Object.assign(m, m.versions[i], { version: i });
        persist();
        renderConversation();
        ui.messageList.querySelector(`li[data-index="${index}"] [data-action="version"][data-step="${button.dataset.step}"]`)?.focus();
        break;
      }
      case 'regenerate': retryLast(state.current); break;
      case 'edit':
        state.editingIndex = index;
        renderConversation();
        $('edit-box')?.focus();
        break;
      case 'edit-cancel':
        state.editingIndex = -1;
        renderConversation();
        break;
      case 'edit-send': {
        const box = $('edit-box');
        const i = state.editingIndex;
        state.editingIndex = -1;
        messages[i].text = box.value;
        delete messages[i].failed;
        messages.splice(i + 1);
        if (i === 0) state.current.title = titleFor(messages[0]);
        generate();
        break;
      }
      default:
    }
  }

  function buildPresets() {
    for (const preset of PRESETS) {
      const label = document.createElement('label');
      label.className = 'preset';
      const input = document.createElement('input');
      input.type = 'radio';
      input.name = 'preset';
      input.value = preset.id;
      input.id = `preset-${preset.id}`;
      const span = document.createElement('span');
      span.textContent = preset.label;
      label.append(input, span);
      ui.presets.append(label);
    }
    ui.presets.addEventListener('change', (e) => {
      state.preset = e.target.value;
      renderComposer();
    });
  }

  function wire() {
    ui.composer.addEventListener('submit', (e) => { e.preventDefault(); send(); });
    ui.prompt.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
        e.preventDefault();
        send();
      }
    });
    ui.prompt.addEventListener('input', autoGrow);
    ui.stop.addEventListener('click', stopGenerating);
    $('attach').addEventListener('click', () => ui.fileInput.click());
    ui.fileInput.addEventListener('change', () => {
      addFiles([...ui.fileInput.files]);
      ui.fileInput.value = '';
    });
    ui.attachments.addEventListener('click', (e) => {
      const button = e.target.closest('[data-remove]');
      if (!button) return;
      state.attachments.remove(Number(button.dataset.remove));
      renderComposer();
      ui.prompt.focus();
    });
    ui.attachments.addEventListener('change', (e) => {
      if (!e.target.dataset.detailKey) return;  // a video's or document's setting: media_tiles.js
      const entry = state.attachments.entries.find((a) => a.key === Number(e.target.dataset.detailKey));
      if (entry) entry.detail = e.target.value;
      renderComposer();
      ui.attachments.querySelector(`[data-detail-key="${e.target.dataset.detailKey}"]`)?.focus();
    });
    document.addEventListener('paste', (e) => {
      const files = attachableFiles(e.clipboardData);
      if (files.length) {
        e.preventDefault();
        addFiles(files);
      }
    });
    let dragDepth = 0;
    const hasFiles = (e) => e.dataTransfer && [...e.dataTransfer.types].includes('Files');
    window.addEventListener('dragenter', (e) => { if (hasFiles(e)) { dragDepth += 1; ui.dropOverlay.hidden = false; } });
    window.addEventListener('dragleave', () => { dragDepth = Math.max(0, dragDepth - 1); if (!dragDepth) ui.dropOverlay.hidden = true; });
    window.addEventListener('dragover', (e) => { if (hasFiles(e)) e.preventDefault(); });
    window.addEventListener('drop', (e) => {
      e.preventDefault();
      dragDepth = 0;
      ui.dropOverlay.hidden = true;
      const files = attachableFiles(e.dataTransfer);
      if (files.length) addFiles(files);
    });
    ui.messageList.addEventListener('click', onMessageAction);
    ui.messageList.addEventListener('keydown', (e) => {
      if (e.target.id === 'edit-box' && e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
        e.preventDefault();
        ui.messageList.querySelector('[data-action="edit-send"]').click();
      } else if (e.target.id === 'edit-box' && e.key === 'Escape') {
        e.stopPropagation();
        ui.messageList.querySelector('[data-action="edit-cancel"]').click();
      }
    });
    ui.list.addEventListener('click', (e) => {
      const del = e.target.closest('[data-delete-id]');
      if (del) return deleteConversation(del.dataset.deleteId);
      const rename = e.target.closest('button[data-rename-id]');
      if (rename) {
        state.renaming = rename.dataset.renameId;
        drawSidebar();
        $('rename-input').focus();
        $('rename-input').select();
        return undefined;
      }
      const open = e.target.closest('[data-id]');
      if (open) openConversation(state.conversations.find((c) => c.id === open.dataset.id));
    });
    $('new-chat').addEventListener('click', () => startNewConversation());
    ui.clear.addEventListener('click', () => {
      if (busy() || !state.current.messages.length) return;
      if (!window.confirm('Clear every message of this conversation?')) return;
      state.current.messages = [];
      state.current.title = '';
      state.editingIndex = -1;
      persist();
      pruneImages(usedImageIds());
      hideError();
      renderConversation();
    });
    $('menu-button').addEventListener('click', () => setDrawer(!document.body.classList.contains('sidebar-open')));
    $('scrim').addEventListener('click', () => closeSidebar(true));
    document.addEventListener('keydown', (e) => {
      if (e.key !== 'Escape' || document.querySelector('dialog[open]')) return;
      if (document.body.classList.contains('sidebar-open')) closeSidebar(true);
      else if (busy()) {
        stopGenerating();
        ui.prompt.focus();
      }
    });
    ui.retry.addEventListener('click', () => { const retry = state.retryAction; hideError(); if (retry) retry(); });
    $('error-dismiss').addEventListener('click', hideError);
    $('open-settings').addEventListener('click', openSettings);
  }


  // Search and rename in the conversation list.
  $('search').addEventListener('input', () => {
    state.query = $('search').value;
    drawSidebar();
  });
  const finishRename = (save) => {
    const input = $('rename-input');
    if (!input || !state.renaming) return;
    const c = state.conversations.find((x) => x.id === input.dataset.renameId);
    state.renaming = null;
    if (save && c && input.value.trim()) {
      c.title = input.value.trim().slice(0, 80);
      persist();
    }
    renderConversation();
    ui.list.querySelector(`[data-rename-id="${c ? c.id : ''}"]`)?.focus();
  };
  ui.list.addEventListener('keydown', (e) => {
    if (e.target.id !== 'rename-input') return;
    if (e.key === 'Enter') { e.preventDefault(); finishRename(true); }
    if (e.key === 'Escape') { e.stopPropagation(); finishRename(false); }
  });
  ui.list.addEventListener('focusout', (e) => { if (e.target.id === 'rename-input') finishRename(true); });

  const fileName = (ext) => `${(state.current.title || 'conversation').replace(/[^\w .-]+/g, '_').slice(0, 50)}.${ext}`;
  $('export-json').addEventListener('click', async () => downloadText(fileName('json'), await conversationJson(state.current), 'application/json'));
  $('export-md').addEventListener('click', () => downloadText(fileName('md'), conversationMarkdown(state.current), 'text/markdown'));
  $('import').addEventListener('click', () => $('import-input').click());
  $('import-input').addEventListener('change', async () => {
    const file = $('import-input').files[0];
    $('import-input').value = '';
    if (!file) return;
    try {
      const conversation = await importConversation(await file.text());
      state.conversations.push(conversation);
      persist();
      await openConversation(conversation);
      notice(`Imported “${conversation.title}”.`);
    } catch (error) {
      notice(`Could not import ${file.name}: ${error.message}.`);
    }
  });

  buildPresets();
  wire();
}
