// Test harness of the page's modules (tests/server/test_markdown.py): loads them from the page's
// own directory and exposes them, with a checker of rendered DOM, as window.harness.
import { renderMarkdown } from '/assets/markdown.js';
import { highlight } from '/assets/highlight.js';
import { Conversation } from '/assets/conversation.js';
import { encodePath, sessionFileUrl } from '/assets/api.js';

const ALLOWED_TAGS = new Set([
  'P', 'H1', 'H2', 'H3', 'H4', 'H5', 'H6', 'UL', 'OL', 'LI', 'BLOCKQUOTE', 'PRE', 'CODE', 'SPAN',
  'STRONG', 'EM', 'DEL', 'A', 'IMG', 'BR', 'HR', 'TABLE', 'THEAD', 'TBODY', 'TR', 'TH', 'TD', 'DIV',
]);
const ALLOWED_ATTRS = new Set(
  ['class', 'href', 'target', 'rel', 'title', 'src', 'alt', 'loading', 'start', 'data-lang']);

// The conversation's own structure adds these.
const CONVERSATION_TAGS = new Set(['ARTICLE', 'DETAILS', 'SUMMARY', 'FIGURE', 'FIGCAPTION']);
const CONVERSATION_ATTRS = new Set(
  ['data-turn', 'aria-busy', 'aria-label', 'download', 'open', 'hidden']);

// What a hostile text could have achieved in `root`: a list of violations (empty: none).
function violations(root, conversation = false) {
  const out = [];
  for (const e of root.querySelectorAll('*')) {
    if (!ALLOWED_TAGS.has(e.tagName) && !(conversation && CONVERSATION_TAGS.has(e.tagName))) {
      out.push('element ' + e.tagName);
    }
    for (const a of e.attributes) {
      if (/^on/i.test(a.name)) out.push('event handler ' + a.name + ' on ' + e.tagName);
      else if (!ALLOWED_ATTRS.has(a.name) && !(conversation && CONVERSATION_ATTRS.has(a.name))) {
        out.push('attribute ' + a.name + ' on ' + e.tagName);
      }
    }
    if (e.tagName === 'A') {
      const href = e.getAttribute('href') || '';
      const url = new URL(href, document.baseURI);
      if (conversation && e.hasAttribute('download')) {
        // The page's own download links: this origin's file API only.
        if (url.origin !== location.origin || !url.pathname.startsWith('/v1/')) {
          out.push('download from ' + url.href);
        }
      } else {
        if (!/^(https?:\/\/|mailto:)/i.test(href)) out.push('href ' + JSON.stringify(href));
        if (e.target !== '_blank' || !/\bnoopener\b/.test(e.rel)) out.push('link without noopener');
      }
    }
    if (e.tagName === 'IMG') {
      const u = new URL(e.getAttribute('src') || '', document.baseURI);
      if (u.origin !== location.origin || !u.pathname.startsWith('/v1/')) {
        out.push('image from ' + u.href);
      }
    }
  }
  return out;
}

window.harness = {
  renderMarkdown,
  highlight,
  Conversation,
  violations,
  encodePath,
  // A Conversation in #conv whose files are those of the session `id`.
  conversation(id) {
    const root = document.getElementById('conv');
    return new Conversation(root, { fileUrl: (path, inline) => sessionFileUrl(id, path, inline) });
  },
  // Renders `text` into #out; {violations, html, text, ms}.
  render(text, options = {}) {
    const out = document.getElementById('out');
    const t0 = performance.now();
    out.replaceChildren(renderMarkdown(text, options));
    const ms = performance.now() - t0;
    return { violations: violations(out), html: out.innerHTML, text: out.textContent, ms };
  },
};
window.harnessReady = true;
