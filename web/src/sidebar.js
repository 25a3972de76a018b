// The conversation list and the drawer it becomes on narrow screens. Deleting is undoable
// for a few seconds (a toast); the × shows on hover or keyboard focus only.
const $ = (id) => document.getElementById(id);
const UNDO_MS = 8000;

const DAY = 24 * 60 * 60 * 1000;

// "Today", "Yesterday", "Previous 7 days", "Previous 30 days", else the month.
export function dateGroup(time, now = Date.now()) {
  const start = new Date(now);
  start.setHours(0, 0, 0, 0);
  const today = start.getTime();
  if (time >= today) return 'Today';
  if (time >= today - DAY) return 'Yesterday';
  if (time >= today - 7 * DAY) return 'Previous 7 days';
  if (time >= today - 30 * DAY) return 'Previous 30 days';
  return new Date(time).toLocaleDateString('en', { month: 'long', year: 'numeric' });
}

const matches = (c, query) => !query || (c.title || '').toLowerCase().includes(query) ||
  c.messages.some((m) => (m.text || '').toLowerCase().includes(query));

function iconButton(className, label, data, path) {
  const button = document.createElement('button');
  button.type = 'button';
  button.className = `icon-button small ${className}`;
  Object.assign(button.dataset, data);
  button.setAttribute('aria-label', label);
  button.innerHTML = `<svg aria-hidden="true" viewBox="0 0 24 24"><path d="${path}"/></svg>`;
  return button;
}

// The list, newest first, in date groups; `query` filters by title and text; `renaming` is the
// id of the conversation whose title is being edited.
export function renderSidebar(list, conversations, current, { query = '', renaming = null } = {}) {
  const q = query.trim().toLowerCase();
  const groups = new Map();
  for (const c of [...conversations].sort((a, b) => b.updated - a.updated)) {
    if (!matches(c, q)) continue;
    const group = dateGroup(c.updated);
    if (!groups.has(group)) groups.set(group, []);
    groups.get(group).push(c);
  }
  const items = [...groups].map(([name, members], g) => {
    const group = document.createElement('li');
    group.className = 'conversation-group';
    const title = document.createElement('span');
    title.className = 'group-title';
    title.id = `group-${g}`;
    title.textContent = name;
    const ul = document.createElement('ul');
    ul.setAttribute('aria-labelledby', title.id);
    ul.append(...members.map((c) => conversationItem(c, current, renaming)));
    group.append(title, ul);
    return group;
  });
  if (!items.length && q) {
    const none = document.createElement('li');
    none.className = 'sidebar-note';
    none.textContent = 'No conversation matches.';
    items.push(none);
  }
  list.replaceChildren(...items);
}

function conversationItem(c, current, renaming) {
  const li = document.createElement('li');
  li.className = c === current ? 'conversation active' : 'conversation';
  const name = c.title || 'New chat';
  if (renaming === c.id) {
    const input = document.createElement('input');
    input.className = 'rename-input';
    input.id = 'rename-input';
    input.value = name;
    input.dataset.renameId = c.id;
    input.setAttribute('aria-label', 'Conversation title');
    li.append(input);
    return li;
  }
  const open = document.createElement('button');
  open.type = 'button';
  open.className = 'conversation-open';
  open.dataset.id = c.id;
  if (c === current) open.setAttribute('aria-current', 'true');
  const title = document.createElement('span');
  title.className = 'conversation-title';
  title.textContent = name;
  const when = document.createElement('span');
  when.className = 'conversation-date';
  when.textContent = new Date(c.updated).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
  open.append(title, when);
  li.append(open,
    iconButton('conversation-rename', `Rename conversation “${name}”`, { renameId: c.id }, 'M4 20h4L19 9l-4-4L4 16v4zM13.5 6.5l4 4'),
    iconButton('conversation-delete', `Delete conversation “${name}”`, { deleteId: c.id }, 'M6 6l12 12M18 6 6 18'));
  return li;
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
