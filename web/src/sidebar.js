// The conversation list and the drawer it becomes on narrow screens. Deleting is undoable
// for a few seconds (a toast); the × shows on hover or keyboard focus only.
const $ = (id) => document.getElementById(id);
const UNDO_MS = 8000;

export function renderSidebar(list, conversations, current) {
  const items = [...conversations].sort((a, b) => b.updated - a.updated).map((c) => {
    const li = document.createElement('li');
    li.className = c === current ? 'conversation active' : 'conversation';
    const open = document.createElement('button');
    open.type = 'button';
    open.className = 'conversation-open';
    open.dataset.id = c.id;
    if (c === current) open.setAttribute('aria-current', 'true');
    const title = document.createElement('span');
    title.className = 'conversation-title';
    title.textContent = c.title || 'New chat';
    const when = document.createElement('span');
    when.className = 'conversation-date';
    when.textContent = new Date(c.updated).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
    open.append(title, when);
    const del = document.createElement('button');
    del.type = 'button';
    del.className = 'icon-button small conversation-delete';
    del.dataset.deleteId = c.id;
    del.setAttribute('aria-label', `Delete conversation “${c.title || 'New chat'}”`);
    del.innerHTML = '<svg aria-hidden="true" viewBox="0 0 24 24"><path d="M6 6l12 12M18 6 6 18"/></svg>';
    li.append(open, del);
    return li;
  });
  list.replaceChildren(...items);
}

// A toast with an Undo button. `onUndo` runs if it is pressed in time, `onExpire` otherwise.
let pending = null;
export function undoToast(text, onUndo, onExpire) {
  if (pending) pending.expire();
  const toast = $('toast');
  $('toast-text').textContent = text;
  toast.hidden = false;
  const finish = (undo) => {
    clearTimeout(pending.timer);
    pending = null;
    toast.hidden = true;
    $('toast-undo').onclick = null;
    (undo ? onUndo : onExpire)();
  };
  pending = { timer: setTimeout(() => finish(false), UNDO_MS), expire: () => finish(false) };
  $('toast-undo').onclick = () => finish(true);
}

// The drawer: the rest of the page is inert while it is open, so focus stays inside it.
export function setDrawer(open) {
  document.body.classList.toggle('sidebar-open', open);
  $('menu-button').setAttribute('aria-expanded', String(open));
  $('scrim').hidden = !open;
  const main = document.querySelector('.main');
  const narrow = window.matchMedia('(max-width: 860px)').matches;
  main.inert = open && narrow;
  if (open) $('new-chat').focus();
}
