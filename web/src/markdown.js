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
  for (const pre of element.querySelectorAll('pre')) {
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
