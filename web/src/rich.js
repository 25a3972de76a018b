// Loaded only when an answer has maths or code (see loadRich in markdown.js), so the page's
// first load stays small: KaTeX for the TeX that the Markdown renderer marked, highlight.js
// (a set of common languages) for code blocks. Both build DOM nodes or escaped markup only.
import katex from 'katex';
import hljs from 'highlight.js/lib/core';
import bash from 'highlight.js/lib/languages/bash';
import c from 'highlight.js/lib/languages/c';
import cpp from 'highlight.js/lib/languages/cpp';
import css from 'highlight.js/lib/languages/css';
import go from 'highlight.js/lib/languages/go';
import java from 'highlight.js/lib/languages/java';
import javascript from 'highlight.js/lib/languages/javascript';
import json from 'highlight.js/lib/languages/json';
import markdown from 'highlight.js/lib/languages/markdown';
import python from 'highlight.js/lib/languages/python';
import rust from 'highlight.js/lib/languages/rust';
import sql from 'highlight.js/lib/languages/sql';
import typescript from 'highlight.js/lib/languages/typescript';
import xml from 'highlight.js/lib/languages/xml';
import yaml from 'highlight.js/lib/languages/yaml';

const LANGUAGES = { bash, c, cpp, css, go, java, javascript, json, markdown, python, rust, sql, typescript, xml, yaml };
for (const [name, language] of Object.entries(LANGUAGES)) hljs.registerLanguage(name, language);

function enhance(root) {
  for (const el of root.querySelectorAll('[data-tex]:not([data-rendered])')) {
    try {
      // TeX KaTeX cannot parse throws and stays as written: its own error rendering sets a style
      // attribute, which the page's CSP (style-src 'self') blocks and reports.
      katex.render(el.dataset.tex, el, { displayMode: el.classList.contains('math-display'), throwOnError: true, trust: false, maxSize: 20, maxExpand: 200 });
      el.dataset.rendered = '';
    } catch {
      el.textContent = el.dataset.tex;  // render() emptied it before parsing
    }
  }
  for (const code of root.querySelectorAll('pre code:not([data-highlighted])')) {
    const lang = /language-([\w+#-]+)/.exec(code.className);
    if (lang && hljs.getLanguage(lang[1])) hljs.highlightElement(code);
  }
}

window.qvlRich = { enhance };
window.dispatchEvent(new Event('qvl-rich'));
