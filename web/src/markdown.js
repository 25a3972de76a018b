// Model output -> safe HTML. markdown-it never passes raw HTML through (html: false) and does
// not render images (no request can leave the page through model output); DOMPurify then
// removes anything executable that might still slip through, as a second line of defence.
import MarkdownIt from 'markdown-it';
import DOMPurify from 'dompurify';

const md = new MarkdownIt({ html: false, linkify: true, breaks: true, typographer: false });
md.disable(['image']);

// Links open in a new tab without telling the target where they came from.
const defaultLink = md.renderer.rules.link_open ||
  ((tokens, idx, options, env, self) => self.renderToken(tokens, idx, options));
md.renderer.rules.link_open = (tokens, idx, options, env, self) => {
  tokens[idx].attrSet('target', '_blank');
  tokens[idx].attrSet('rel', 'noopener noreferrer nofollow');
  return defaultLink(tokens, idx, options, env, self);
};

// Model headings sit below the page's own (h1 title, h2 per message): # becomes h3, ## h4, ...
for (const rule of ['heading_open', 'heading_close']) {
  md.renderer.rules[rule] = (tokens, idx, options, env, self) => {
    tokens[idx].tag = `h${Math.min(6, Number(tokens[idx].tag.slice(1)) + 2)}`;
    return self.renderToken(tokens, idx, options);
  };
}
// Table alignment as a class (the sanitiser removes every style attribute).
for (const rule of ['th_open', 'td_open']) {
  md.renderer.rules[rule] = (tokens, idx, options, env, self) => {
    const token = tokens[idx];
    const align = /text-align:(left|right|center)/.exec(token.attrGet('style') || '');
    if (align) {
      token.attrs = token.attrs.filter(([name]) => name !== 'style');
      token.attrSet('class', `align-${align[1]}`);
    }
    return self.renderToken(tokens, idx, options);
  };
}

// Maths: \( \) and $ $ inline, \[ \] and $$ $$ as blocks. Marked here with the TeX as text
// (readable as it is), typeset by KaTeX in rich.js. Runs before the escape rule, which would
// eat the backslashes. `$` needs no space inside and no digit after, so prices stay prices.
const escapeHtml = (text) => text.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]);

function mathInline(state, silent) {
  const src = state.src;
  const pos = state.pos;
  let open;
  let close;
  if (src.startsWith('\\(', pos)) [open, close] = ['\\(', '\\)'];
  else if (src.startsWith('$$', pos)) [open, close] = ['$$', '$$'];
  else if (src[pos] === '$') [open, close] = ['$', '$'];
  else return false;
  const start = pos + open.length;
  let end = src.indexOf(close, start);
  while (end > 0 && src[end - 1] === '\\' && close === '$') end = src.indexOf(close, end + 1);
  if (end <= start) return false;
  const tex = src.slice(start, end);
  if (open === '$' && (/^\s|\s$/.test(tex) || /\d/.test(src[end + 1] || ''))) return false;
  if (!silent) {
    const token = state.push('math_inline', 'span', 0);
    token.content = tex;
    token.markup = open;
  }
  state.pos = end + close.length;
  return true;
}

function mathBlock(state, startLine, endLine, silent) {
  const lineText = (line) => state.src.slice(state.bMarks[line] + state.tShift[line], state.eMarks[line]);
  const first = lineText(startLine);
  let open;
  let close;
  if (first.startsWith('$$')) [open, close] = ['$$', '$$'];
  else if (first.startsWith('\\[')) [open, close] = ['\\[', '\\]'];
  else return false;
  let content = first.slice(open.length);
  let line = startLine;
  let found = content.trimEnd().endsWith(close);
  if (found) content = content.trimEnd().slice(0, -close.length);
  while (!found && ++line < endLine) {
    const text = lineText(line).trimEnd();
    found = text.endsWith(close);
    content += `\n${found ? text.slice(0, -close.length) : text}`;
  }
  if (!found) return false;  // not closed (yet, while streaming): plain text until it is
  if (silent) return true;
  state.line = line + 1;
  const token = state.push('math_block', 'div', 0);
  token.block = true;
  token.content = content.trim();
  token.map = [startLine, state.line];
  return true;
}

md.inline.ruler.before('escape', 'math_inline', mathInline);
md.block.ruler.before('fence', 'math_block', mathBlock, { alt: ['paragraph', 'reference', 'blockquote', 'list'] });
md.renderer.rules.math_inline = (tokens, idx) => {
  const { content, markup } = tokens[idx];
  return `<span class="${markup === '$$' ? 'math-display' : 'math-inline'}" data-tex="${escapeHtml(content)}">${escapeHtml(content)}</span>`;
};
md.renderer.rules.math_block = (tokens, idx) => `<div class="math-display" data-tex="${escapeHtml(tokens[idx].content)}">${escapeHtml(tokens[idx].content)}</div>\n`;

// The maths and code-colouring bundle (rich.js), fetched from the server the first time an
// answer needs it. RICH_JS and RICH_CSS are defined by web/build.mjs.
let richPromise = null;
function loadRich() {
  if (window.qvlRich) return Promise.resolve(window.qvlRich);
  if (typeof RICH_JS === 'undefined') return Promise.reject(new Error('no rich bundle'));
  if (!richPromise) {
    richPromise = new Promise((resolve, reject) => {
      const link = document.createElement('link');
      link.rel = 'stylesheet';
      link.href = RICH_CSS;
      const script = document.createElement('script');
      script.src = RICH_JS;
      script.onload = () => resolve(window.qvlRich);
      script.onerror = () => { richPromise = null; reject(new Error('could not load the maths bundle')); };
      document.head.append(link, script);
    });
  }
  return richPromise;
}

const PURIFY = {
  ALLOWED_URI_REGEXP: /^(?:https?:|mailto:|#)/i,
  FORBID_TAGS: ['style', 'img', 'svg', 'math', 'form', 'input', 'button', 'iframe'],
  FORBID_ATTR: ['style', 'srcset'],
  ADD_ATTR: ['target'],
};

export function renderMarkdown(text) {
  return DOMPurify.sanitize(md.render(text), PURIFY);
}

// Fills `element` with the rendered text and a copy button on every code block.
export function renderInto(element, text) {
  element.innerHTML = renderMarkdown(text);
  // Wide tables and code scroll sideways, so they must be reachable by keyboard.
  for (const table of element.querySelectorAll('table')) {
    const wrap = document.createElement('div');
    wrap.className = 'table-wrap';
    wrap.tabIndex = 0;
    wrap.setAttribute('role', 'group');
    wrap.setAttribute('aria-label', 'Table');
    table.replaceWith(wrap);
    wrap.append(table);
  }
  for (const pre of element.querySelectorAll('pre')) {
    pre.tabIndex = 0;
    const wrap = document.createElement('div');
    wrap.className = 'code-block';
    pre.replaceWith(wrap);
    wrap.append(pre);
    const code = pre.querySelector('code');
    const lang = code && /language-([\w+#-]+)/.exec(code.className);
    const bar = document.createElement('div');
    bar.className = 'code-bar';
    const name = document.createElement('span');
    name.textContent = lang ? lang[1] : 'code';
    const copy = document.createElement('button');
    copy.type = 'button';
    copy.className = 'link-button';
    copy.textContent = 'Copy code';
    copy.dataset.copyCode = '';
    bar.append(name, copy);
    wrap.prepend(bar);
  }
  if (element.querySelector('[data-tex], pre code[class*="language-"]')) {
    loadRich().then((rich) => { if (element.isConnected) rich.enhance(element); }).catch(() => { /* TeX and plain code stay */ });
  }
}
