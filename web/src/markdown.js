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
}
