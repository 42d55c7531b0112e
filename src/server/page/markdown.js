// A small Markdown renderer for untrusted text (the model's answers): it builds DOM nodes with
// document.createElement and textContent and never parses a string as HTML, so raw HTML in the
// text is shown as text. Supported: ATX and setext headings, paragraphs, bullet and ordered lists
// (nested, task items), block quotes, fenced code blocks (Python and shell highlighted),
// thematic breaks, pipe tables; inline code, **strong**, *emphasis*, ~~strikethrough~~, links, images, autolinks,
// bare http(s) URLs, backslash escapes and character references.
//
// Links: an href is resolved with the browser's own URL parser (which drops tabs and newlines and
// lower-cases the scheme, as a browser does when it follows the link) and kept only when its
// scheme is http:, https: or mailto:; anything else (javascript:, data:, vbscript:, obfuscated
// forms) is left as plain text. Links open in a new tab with rel="noopener noreferrer".
// Images are loaded only from this origin's /v1/ API (or a sandbox path mapped by
// options.sandboxUrl); any other image is shown as its alt text, linked when its URL is safe.
//
//   el.replaceChildren(renderMarkdown(text, {sandboxUrl: (path, inline) => url | null}));
//
// The cost is linear in the text (no backtracking regular expressions); nesting deeper than
// kMaxDepth is rendered as text.

import { highlight } from './highlight.js';

const SAFE_PROTOCOLS = new Set(['http:', 'https:', 'mailto:']);
const kMaxDepth = 24;
const kMaxScan = 2048;  // longest link destination in <...> and longest link title

// options.sandboxUrl(path, inline): the URL of a sandbox file ("/output/plot.png") or null;
// options.base: the base URL for relative links (default: the document's).
export function renderMarkdown(source, options = {}) {
  const ctx = {
    sandboxUrl: typeof options.sandboxUrl === 'function' ? options.sandboxUrl : null,
    base: options.base || document.baseURI,
  };
  const frag = document.createDocumentFragment();
  const lines = String(source ?? '').replace(/\r\n?/g, '\n').replace(/\0/g, '\uFFFD').split('\n');
  renderBlocks(lines, frag, ctx, 0, false);
  return frag;
}

// The URL an href may carry, or null. `raw` has had its escapes and references decoded.
export function safeLinkUrl(raw, base = document.baseURI) {
  let url;
  try {
    url = new URL(raw, base);
  } catch {
    return null;
  }
  return SAFE_PROTOCOLS.has(url.protocol) ? url.href : null;
}

function el(tag, className) {
  const e = document.createElement(tag);
  if (className) e.className = className;
  return e;
}

// ---------------------------------------------------------------------------------------------
// Blocks

function isBlank(line) {
  return /^[ \t]*$/.test(line);
}

// Columns of leading white space (a tab advances to the next multiple of 4).
function indentOf(line) {
  let col = 0;
  for (const c of line) {
    if (c === ' ') col++;
    else if (c === '\t') col += 4 - (col % 4);
    else break;
  }
  return col;
}

// `line` without its first `n` columns of white space.
function stripIndent(line, n) {
  let col = 0;
  let i = 0;
  while (i < line.length && col < n) {
    const c = line[i];
    if (c === ' ') col++;
    else if (c === '\t') col += 4 - (col % 4);
    else break;
    i++;
  }
  return ' '.repeat(Math.max(0, col - n)) + line.slice(i);
}

function fenceOpen(line) {
  const m = /^( {0,3})(`{3,}|~{3,})(.*)$/.exec(line);
  if (!m) return null;
  const info = m[3].trim();
  if (m[2][0] === '`' && info.includes('`')) return null;
  return { indent: m[1].length, fence: m[2], lang: info.split(/\s/)[0] || '' };
}

function isFenceClose(line, open) {
  const m = /^ {0,3}(`{3,}|~{3,})[ \t]*$/.exec(line);
  return Boolean(m && m[1][0] === open.fence[0] && m[1].length >= open.fence.length);
}

function headingOf(line) {
  const m = /^ {0,3}(#{1,6})(?:[ \t]|$)/.exec(line);
  if (!m) return null;
  let text = line.slice(m[0].length).trim();
  // A closing sequence of #s preceded by a space (or making up the whole text) is dropped.
  let end = text.length;
  while (end > 0 && text[end - 1] === '#') end--;
  if (end === 0) text = '';
  else if (end < text.length && (text[end - 1] === ' ' || text[end - 1] === '\t')) {
    text = text.slice(0, end).trim();
  }
  return { level: m[1].length, text };
}

function isThematicBreak(line) {
  if (indentOf(line) > 3) return false;
  const s = line.replace(/[ \t]/g, '');
  return s.length >= 3 && /^(?:-+|\*+|_+)$/.test(s);
}

function listMarker(line) {
  const m = /^( {0,3})([-*+]|\d{1,9}[.)])([ \t]+|$)/.exec(line);
  if (!m) return null;
  const marker = m[2];
  const ordered = /\d/.test(marker[0]);
  const base = m[1].length + marker.length;
  let spaces = indentOf(' '.repeat(base) + m[3]) - base;
  let rest = line.slice(m[0].length);
  if (spaces > 4) {
    // Code-like indentation after the marker: the content starts one space after it.
    rest = ' '.repeat(spaces - 1) + rest;
    spaces = 1;
  }
  if (spaces === 0) spaces = 1;  // "-" alone on its line
  return {
    ordered,
    char: ordered ? marker[marker.length - 1] : marker,
    start: ordered ? parseInt(marker, 10) : 1,
    contentIndent: base + spaces,
    rest,
  };
}

function isBlockquote(line) {
  return /^ {0,3}>/.test(line);
}

// True when `line` starts a block that ends a paragraph without a blank line.
function interruptsParagraph(line) {
  if (fenceOpen(line) || headingOf(line) || isThematicBreak(line) || isBlockquote(line)) {
    return true;
  }
  const mk = listMarker(line);
  return Boolean(mk && !isBlank(mk.rest) && (!mk.ordered || mk.start === 1));
}

function splitRow(line) {
  let s = line.trim();
  if (s.startsWith('|')) s = s.slice(1);
  if (s.endsWith('|') && !s.endsWith('\\|')) s = s.slice(0, -1);
  const cells = [];
  let cur = '';
  for (let i = 0; i < s.length; i++) {
    if (s[i] === '\\' && s[i + 1] === '|') {
      cur += '|';
      i++;
    } else if (s[i] === '|') {
      cells.push(cur.trim());
      cur = '';
    } else {
      cur += s[i];
    }
  }
  cells.push(cur.trim());
  return cells;
}

function tableAlignments(line) {
  if (!line.includes('-') || indentOf(line) > 3) return null;
  const cells = splitRow(line);
  const aligns = [];
  for (const c of cells) {
    if (!/^:?-+:?$/.test(c)) return null;
    const left = c.startsWith(':');
    const right = c.endsWith(':');
    aligns.push(left && right ? 'center' : right ? 'right' : left ? 'left' : '');
  }
  return aligns;
}

function tableStart(lines, i) {
  if (i + 1 >= lines.length || !lines[i].includes('|')) return null;
  const aligns = tableAlignments(lines[i + 1]);
  if (!aligns) return null;
  const header = splitRow(lines[i]);
  return header.length === aligns.length ? { header, aligns } : null;
}

// Renders `lines` as blocks into `parent`. `tight`: paragraphs go in without a <p> (list items).
function renderBlocks(lines, parent, ctx, depth, tight) {
  if (depth > kMaxDepth) {
    const p = el('p');
    p.textContent = lines.join('\n');
    parent.append(p);
    return;
  }
  let i = 0;
  const n = lines.length;
  while (i < n) {
    const line = lines[i];
    if (isBlank(line)) {
      i++;
      continue;
    }
    const fence = fenceOpen(line);
    if (fence) {
      const body = [];
      i++;
      while (i < n && !isFenceClose(lines[i], fence)) {
        body.push(stripIndent(lines[i], fence.indent));
        i++;
      }
      i++;  // the closing fence (an unclosed block runs to the end, as while streaming)
      parent.append(codeBlock(body.join('\n'), fence.lang));
      continue;
    }
    const heading = headingOf(line);
    if (heading) {
      const h = el('h' + heading.level);
      renderInline(heading.text, h, ctx);
      parent.append(h);
      i++;
      continue;
    }
    if (isThematicBreak(line)) {
      parent.append(el('hr'));
      i++;
      continue;
    }
    if (isBlockquote(line)) {
      const inner = [];
      while (i < n) {
        const l = lines[i];
        if (isBlockquote(l)) {
          inner.push(l.replace(/^ {0,3}> ?/, ''));
        } else if (!isBlank(l) && inner.length && !isBlank(inner[inner.length - 1]) &&
                   !interruptsParagraph(l)) {
          inner.push(l);  // a lazy continuation line
        } else {
          break;
        }
        i++;
      }
      const q = el('blockquote');
      renderBlocks(inner, q, ctx, depth + 1, false);
      parent.append(q);
      continue;
    }
    if (listMarker(line)) {
      i = renderList(lines, i, parent, ctx, depth);
      continue;
    }
    const table = tableStart(lines, i);
    if (table) {
      i = renderTable(lines, i, table, parent, ctx);
      continue;
    }
    // A paragraph, or a setext heading when underlined.
    const para = [line.trim()];
    i++;
    let setext = 0;
    while (i < n) {
      const l = lines[i];
      if (isBlank(l)) break;
      if (/^ {0,3}=+[ \t]*$/.test(l)) {
        setext = 1;
        i++;
        break;
      }
      if (/^ {0,3}-+[ \t]*$/.test(l)) {
        setext = 2;
        i++;
        break;
      }
      if (interruptsParagraph(l) || tableStart(lines, i)) break;
      para.push(l.trim());
      i++;
    }
    if (setext) {
      const h = el('h' + setext);
      renderInline(para.join('\n'), h, ctx);
      parent.append(h);
    } else if (tight) {
      renderInline(para.join('\n'), parent, ctx);
    } else {
      const p = el('p');
      renderInline(para.join('\n'), p, ctx);
      parent.append(p);
    }
  }
}

function codeBlock(code, lang) {
  const pre = el('pre', 'md-code');
  const c = el('code');
  if (lang) {
    c.className = 'language-' + lang.replace(/[^A-Za-z0-9_+-]/g, '');
    pre.dataset.lang = lang.slice(0, 40);
  }
  c.append(highlight(code, lang));
  pre.append(c);
  return pre;
}

function renderList(lines, i, parent, ctx, depth) {
  const first = listMarker(lines[i]);
  const list = el(first.ordered ? 'ol' : 'ul');
  if (first.ordered && first.start !== 1) list.start = first.start;
  const items = [];
  let loose = false;
  const n = lines.length;
  while (i < n) {
    const mk = listMarker(lines[i]);
    if (!mk || mk.ordered !== first.ordered || mk.char !== first.char) break;
    const item = [mk.rest];
    i++;
    let sawBlank = false;
    while (i < n) {
      const l = lines[i];
      if (isBlank(l)) {
        item.push('');
        sawBlank = true;
        i++;
        continue;
      }
      if (indentOf(l) >= mk.contentIndent) {
        item.push(stripIndent(l, mk.contentIndent));
        i++;
        continue;
      }
      if (sawBlank) break;
      // A lazy continuation of the item's paragraph.
      if (!interruptsParagraph(l) && !listMarker(l)) {
        item.push(l.trim());
        i++;
        continue;
      }
      break;
    }
    let trailingBlank = false;
    while (item.length > 1 && isBlank(item[item.length - 1])) {
      item.pop();
      trailingBlank = true;
    }
    // A blank line between two blocks of an item (outside code), or between items, makes the
    // list loose.
    let fenced = null;
    for (let k = 1; k < item.length - 1; k++) {
      if (fenced) {
        if (isFenceClose(item[k], fenced)) fenced = null;
      } else if ((fenced = fenceOpen(item[k]))) {
        continue;
      } else if (isBlank(item[k]) && !isBlank(item[k - 1])) {
        loose = true;
      }
    }
    if (trailingBlank && i < n) {
      const next = listMarker(lines[i]);
      if (next && next.ordered === first.ordered && next.char === first.char) loose = true;
    }
    items.push(item);
  }
  for (const item of items) {
    const li = el('li');
    // A task list item: "[ ] todo" or "[x] done".
    const task = /^\[([ xX])\][ \t]+/.exec(item[0]);
    if (task) {
      item[0] = item[0].slice(task[0].length);
      li.className = 'md-task';
      li.append(el('span', task[1] === ' ' ? 'md-check' : 'md-check md-checked'));
      li.lastChild.textContent = task[1] === ' ' ? '\u2610 ' : '\u2611 ';
    }
    renderBlocks(item, li, ctx, depth + 1, !loose);
    list.append(li);
  }
  parent.append(list);
  return i;
}

function renderTable(lines, i, table, parent, ctx) {
  const wrap = el('div', 'md-table');
  const t = el('table');
  const thead = el('thead');
  const tr = el('tr');
  table.header.forEach((cell, k) => tr.append(tableCell('th', cell, table.aligns[k], ctx)));
  thead.append(tr);
  t.append(thead);
  const tbody = el('tbody');
  i += 2;
  while (i < lines.length && !isBlank(lines[i]) && !interruptsParagraph(lines[i])) {
    const cells = splitRow(lines[i]);
    const row = el('tr');
    for (let k = 0; k < table.header.length; k++) {
      row.append(tableCell('td', cells[k] ?? '', table.aligns[k], ctx));
    }
    tbody.append(row);
    i++;
  }
  if (tbody.children.length) t.append(tbody);
  wrap.append(t);
  parent.append(wrap);
  return i;
}

function tableCell(tag, text, align, ctx) {
  const c = el(tag, align ? 'align-' + align : '');
  renderInline(text, c, ctx);
  return c;
}

// ---------------------------------------------------------------------------------------------
// Inlines

const PUNCTUATION = /[!-/:-@[-`{-~]/;
const ENTITIES = {
  amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: '\u00A0', colon: ':', tab: '\t',
  newline: '\n', lpar: '(', rpar: ')', sol: '/', bsol: '\\', num: '#', excl: '!', period: '.',
  comma: ',', semi: ';', equals: '=', lowbar: '_', ast: '*', grave: '`', lsqb: '[', rsqb: ']',
  lbrack: '[', rbrack: ']', percnt: '%', quest: '?', commat: '@', hellip: '\u2026',
  mdash: '\u2014', ndash: '\u2013', copy: '\u00A9', reg: '\u00AE', trade: '\u2122',
  laquo: '\u00AB', raquo: '\u00BB', middot: '\u00B7', times: '\u00D7', deg: '\u00B0',
  rarr: '\u2192', larr: '\u2190', hArr: '\u21D4', rArr: '\u21D2', le: '\u2264', ge: '\u2265',
  ne: '\u2260', plusmn: '\u00B1', euro: '\u20AC', pound: '\u00A3', yen: '\u00A5', shy: '\u00AD',
};
const ENTITY_RE = /&(?:#[xX]([0-9a-fA-F]{1,6})|#([0-9]{1,7})|([A-Za-z][A-Za-z0-9]{1,31}));/y;

// [decoded text, length] of a character reference at src[i], or null.
function entityAt(src, i) {
  ENTITY_RE.lastIndex = i;
  const m = ENTITY_RE.exec(src);
  if (!m) return null;
  let text;
  if (m[3] !== undefined) {
    if (!Object.prototype.hasOwnProperty.call(ENTITIES, m[3])) return null;
    text = ENTITIES[m[3]];
  } else {
    const cp = m[1] !== undefined ? parseInt(m[1], 16) : parseInt(m[2], 10);
    const ok = cp > 0 && cp <= 0x10ffff && !(cp >= 0xd800 && cp <= 0xdfff);
    text = ok ? String.fromCodePoint(cp) : '\uFFFD';
  }
  return [text, m[0].length];
}

// Backslash escapes and character references of a link destination, title or alt text.
function unescape(s) {
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c === '\\' && i + 1 < s.length && PUNCTUATION.test(s[i + 1])) {
      out += s[++i];
    } else if (c === '&') {
      const e = entityAt(s, i);
      if (e) {
        out += e[0];
        i += e[1] - 1;
      } else {
        out += c;
      }
    } else {
      out += c;
    }
  }
  return out;
}

const LABEL = '[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?';
const AUTOLINK = new RegExp(
  '<([A-Za-z][A-Za-z0-9+.-]{1,31}:[^\\s<>]*|' +
  "[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@" + LABEL + '(?:\\.' + LABEL + ')*)>', 'y');

function renderInline(src, parent, ctx) {
  new InlineParser(src, ctx).parse(0, src.length, parent, 0, false);
}

class InlineParser {
  constructor(src, ctx) {
    this.src = src;
    this.ctx = ctx;
    this.codeEnd = new Map();  // start of a code span's opening run -> start of its closing run
    this.bracket = new Map();  // index of '[' -> index of its matching ']'
    this.failed = new Map();  // delimiter -> {from, end}: no closer at or after `from` before `end`
    this.scan();
  }

  // One pass: code spans (a backtick run closes at the next run of the same length), then the
  // brackets outside code spans and escapes, matched with a stack.
  scan() {
    const s = this.src;
    const runs = [];
    for (let i = 0; i < s.length;) {
      if (s[i] === '`') {
        let j = i;
        while (s[j] === '`') j++;
        runs.push([i, j - i]);
        i = j;
      } else {
        i++;
      }
    }
    const nextSame = new Array(runs.length).fill(-1);
    const lastOfLength = new Map();
    for (let k = runs.length - 1; k >= 0; k--) {
      nextSame[k] = lastOfLength.has(runs[k][1]) ? lastOfLength.get(runs[k][1]) : -1;
      lastOfLength.set(runs[k][1], k);
    }
    const runAt = new Map(runs.map((r, k) => [r[0], k]));
    const stack = [];
    for (let i = 0; i < s.length;) {
      const c = s[i];
      if (c === '\\' && i + 1 < s.length && PUNCTUATION.test(s[i + 1])) {
        i += 2;
      } else if (c === '`') {
        const k = runAt.get(i);
        if (k === undefined) {  // the rest of a run whose first backtick was escaped
          while (s[i] === '`') i++;
          continue;
        }
        const len = runs[k][1];
        const close = nextSame[k];
        if (close >= 0) {
          this.codeEnd.set(i, runs[close][0]);
          i = runs[close][0] + len;
        } else {
          i += len;
        }
      } else if (c === '[') {
        stack.push(i++);
      } else if (c === ']') {
        if (stack.length) this.bracket.set(stack.pop(), i);
        i++;
      } else {
        i++;
      }
    }
  }

  // Renders src[start, end) into `parent`. `inLink`: links are text (no links inside links).
  parse(start, end, parent, depth, inLink) {
    const s = this.src;
    let text = '';
    const flush = () => {
      if (text) appendText(parent, text);
      text = '';
    };
    if (depth > kMaxDepth) {
      appendText(parent, s.slice(start, end));
      return;
    }
    let i = start;
    while (i < end) {
      const c = s[i];
      if (c === '\\') {
        if (s[i + 1] === '\n' && i + 1 < end) {
          flush();
          parent.append(el('br'));
          i += 2;
          continue;
        }
        if (i + 1 < end && PUNCTUATION.test(s[i + 1])) {
          text += s[i + 1];
          i += 2;
          continue;
        }
        text += c;
        i++;
        continue;
      }
      if (c === '`') {
        let j = i;
        while (j < end && s[j] === '`') j++;
        const len = j - i;
        const close = this.codeEnd.get(i);
        if (close !== undefined && close + len <= end) {
          flush();
          let code = s.slice(j, close).replace(/\n/g, ' ');
          if (code.length > 2 && code[0] === ' ' && code[code.length - 1] === ' ' &&
              code.trim()) {
            code = code.slice(1, -1);
          }
          const ce = el('code');
          ce.textContent = code;
          parent.append(ce);
          i = close + len;
        } else {
          text += s.slice(i, j);
          i = j;
        }
        continue;
      }
      if (c === '!' && s[i + 1] === '[') {
        const link = this.linkAt(i + 1, end);
        if (link) {
          flush();
          parent.append(this.image(link));
          i = link.end;
          continue;
        }
        text += c;
        i++;
        continue;
      }
      if (c === '[' && !inLink) {
        const link = this.linkAt(i, end);
        if (link) {
          flush();
          parent.append(this.link(link, depth));
          i = link.end;
          continue;
        }
      }
      if (c === '<') {
        const auto = inLink ? null : this.autolinkAt(i, end);
        if (auto) {
          flush();
          parent.append(auto.node);
          i = auto.end;
          continue;
        }
        text += c;
        i++;
        continue;
      }
      if ((c === 'h' || c === 'H') && !inLink && !/[A-Za-z0-9]/.test(s[i - 1] ?? '')) {
        const bare = this.bareUrlAt(i, end);
        if (bare) {
          flush();
          parent.append(bare.node);
          i = bare.end;
          continue;
        }
      }
      if (c === '*' || c === '_' || c === '~') {
        const em = this.emphasisAt(i, end);
        if (em) {
          flush();
          const outer = el(em.tags[0]);
          let inner = outer;
          for (const tag of em.tags.slice(1)) {
            const e = el(tag);
            inner.append(e);
            inner = e;
          }
          this.parse(em.contentStart, em.contentEnd, inner, depth + 1, inLink);
          parent.append(outer);
          i = em.end;
          continue;
        }
        // No closer: the whole run is text.
        let j = i;
        while (j < end && s[j] === c) j++;
        text += s.slice(i, j);
        i = j;
        continue;
      }
      if (c === '&') {
        const e = entityAt(s, i);
        if (e && i + e[1] <= end) {
          text += e[0];
          i += e[1];
          continue;
        }
      }
      if (c === '\n') {
        // A line break: hard ("  \n") or soft; a chat shows both as a break.
        let e = text.length;
        while (e > 0 && text[e - 1] === ' ') e--;
        text = text.slice(0, e);
        flush();
        parent.append(el('br'));
        i++;
        continue;
      }
      text += c;
      i++;
    }
    flush();
  }

  // [text](destination "title") starting at src[i] === '['; null when it is not one.
  linkAt(i, end) {
    const s = this.src;
    const close = this.bracket.get(i);
    if (close === undefined || close >= end || s[close + 1] !== '(') return null;
    let j = close + 2;
    const skipSpace = () => {
      let newlines = 0;
      while (j < end && /[ \t\n]/.test(s[j])) {
        if (s[j] === '\n' && ++newlines > 1) return false;
        j++;
      }
      return true;
    };
    if (!skipSpace()) return null;
    let dest = '';
    if (s[j] === '<') {
      let k = j + 1;
      while (k < end && k - j < kMaxScan && !'<>\n'.includes(s[k])) k += s[k] === '\\' ? 2 : 1;
      if (s[k] !== '>' || k >= end) return null;
      dest = s.slice(j + 1, k);
      j = k + 1;
    } else {
      const from = j;
      let parens = 0;
      while (j < end) {
        const c = s[j];
        if (c === '\\' && j + 1 < end && PUNCTUATION.test(s[j + 1])) {
          j += 2;
          continue;
        }
        if (c === ' ' || c === '\n' || (c < ' ' && c !== '\t') || c === '\x7f') break;
        if (c === '(') {
          if (++parens > 32) return null;
        } else if (c === ')') {
          if (parens === 0) break;
          parens--;
        }
        j++;
      }
      if (parens !== 0) return null;
      dest = s.slice(from, j);
    }
    const beforeTitle = j;
    if (!skipSpace()) return null;
    let title = '';
    const q = s[j];
    if (j > beforeTitle && (q === '"' || q === "'" || q === '(')) {
      const closeQ = q === '(' ? ')' : q;
      let k = j + 1;
      while (k < end && k - j < kMaxScan && s[k] !== closeQ) k += s[k] === '\\' ? 2 : 1;
      if (k >= end || s[k] !== closeQ) return null;
      title = s.slice(j + 1, k);
      j = k + 1;
      if (!skipSpace()) return null;
    }
    if (s[j] !== ')' || j >= end) return null;
    return {
      textStart: i + 1,
      textEnd: close,
      dest: unescape(dest),
      title: unescape(title),
      end: j + 1,
    };
  }

  // The href of a destination: a sandbox path through ctx.sandboxUrl, else a safe URL, else null.
  href(dest, inline) {
    return this.sandboxHref(dest, inline) || safeLinkUrl(dest, this.ctx.base);
  }

  // The URL of a sandbox path ("/output/plot.png") when options.sandboxUrl maps it to this
  // origin, else null.
  sandboxHref(dest, inline) {
    if (!this.ctx.sandboxUrl || !/^\/(?:output|workspace)\//.test(dest)) return null;
    const u = safeLinkUrl(this.ctx.sandboxUrl(dest, inline) || '', this.ctx.base);
    return u && new URL(u).origin === window.location.origin ? u : null;
  }

  link(link, depth) {
    const href = this.href(link.dest, false);
    if (!href) {
      // Not a link we follow: its text, then the destination as plain text.
      const span = el('span', 'md-unsafe-link');
      this.parse(link.textStart, link.textEnd, span, depth + 1, true);
      const dest = el('span', 'md-unsafe-dest');
      dest.textContent = ' (' + link.dest + ')';
      span.append(dest);
      return span;
    }
    const a = externalLink(href, link.title);
    this.parse(link.textStart, link.textEnd, a, depth + 1, true);
    return a;
  }

  image(link) {
    const alt = unescape(this.src.slice(link.textStart, link.textEnd));
    let src = this.sandboxHref(link.dest, true);
    if (!src) {
      const u = safeLinkUrl(link.dest, this.ctx.base);
      if (u) {
        const url = new URL(u);
        if (url.origin === window.location.origin && url.pathname.startsWith('/v1/')) src = u;
      }
    }
    if (src) {
      const img = el('img', 'md-img');
      img.alt = alt;
      img.loading = 'lazy';
      if (link.title) img.title = link.title;
      img.src = src;
      return img;
    }
    const label = alt ? '[image: ' + alt + ']' : '[image]';
    const href = safeLinkUrl(link.dest, this.ctx.base);
    const node = href ? externalLink(href, 'image not loaded: ' + href) : el('span');
    node.classList.add('md-img-blocked');
    node.textContent = label;
    return node;
  }

  // <https://...>, <mailto:...> or <user@host>; any other <...> is text.
  autolinkAt(i, end) {
    const s = this.src;
    AUTOLINK.lastIndex = i;
    const r = AUTOLINK.exec(s);
    if (!r || i + r[0].length > end) return null;
    const target = r[1].includes(':') ? r[1] : 'mailto:' + r[1];
    const href = safeLinkUrl(target, this.ctx.base);
    if (!href || !/^(?:https?|mailto):/i.test(target)) return null;
    const a = externalLink(href, '');
    a.textContent = r[1];
    return { node: a, end: i + r[0].length };
  }

  // A bare http(s) URL (GFM's extended autolink), without trailing punctuation.
  bareUrlAt(i, end) {
    const s = this.src;
    const re = /https?:\/\/[^\s<>"`]+/iy;
    re.lastIndex = i;
    const m = re.exec(s);
    if (!m) return null;
    let url = m[0].slice(0, end - i);
    let open = count(url, '(');
    let close = count(url, ')');
    let n = url.length;
    for (; n > 0; n--) {
      const last = url[n - 1];
      if (last === ')' && open < close) close--;
      else if (!/[.,:;!?'*_~]/.test(last)) break;
    }
    url = url.slice(0, n);
    if (!/^https?:\/\/[^/?#]/i.test(url)) return null;
    const href = safeLinkUrl(url, this.ctx.base);
    if (!href) return null;
    const a = externalLink(href, '');
    a.textContent = url;
    return { node: a, end: i + url.length };
  }

  // Emphasis opening at src[i] (a run of * _ or ~), or null when it has no closer.
  emphasisAt(i, end) {
    const s = this.src;
    const c = s[i];
    let j = i;
    while (j < end && s[j] === c) j++;
    const run = j - i;
    const after = s[j];
    if (after === undefined || j >= end || /\s/.test(after)) return null;
    if (c === '_' && /[\p{L}\p{N}]/u.test(s[i - 1] ?? '')) return null;  // intraword _
    const tries = c === '~' ? (run === 2 ? [[2, ['del']]] : [])
      : run >= 3 ? [[3, ['em', 'strong']], [2, ['strong']], [1, ['em']]]
        : run === 2 ? [[2, ['strong']]] : [[1, ['em']]];
    for (const [need, tags] of tries) {
      const close = this.closerOf(c, need, i + need, end);
      if (close >= 0) {
        return { tags, contentStart: i + need, contentEnd: close, end: close + need };
      }
    }
    return null;
  }

  // Index of the first run of `c` (`need` long) from `from` that can close, or -1.
  // Code spans and escapes are skipped.
  closerOf(c, need, from, end) {
    const key = c + need;
    const f = this.failed.get(key);
    if (f && f.end === end && from >= f.from) return -1;
    const s = this.src;
    let j = from;
    while (j < end) {
      const d = s[j];
      if (d === '\\') {
        j += 2;
        continue;
      }
      if (d === '`') {
        const close = this.codeEnd.get(j);
        let k = j;
        while (s[k] === '`') k++;
        j = close !== undefined && close < end ? close + (k - j) : k;
        continue;
      }
      if (d === c) {
        let k = j;
        while (k < end && s[k] === c) k++;
        const len = k - j;
        const before = s[j - 1];
        const canClose = j > from && !/\s/.test(before) &&
          (c !== '_' || !/[\p{L}\p{N}]/u.test(s[k] ?? ''));
        // The closer is a run of the opener's length: "*a **b** c*" is em around a strong.
        if (canClose && len === need) return j;
        j = k;
        continue;
      }
      j++;
    }
    if (!f || f.end !== end || from < f.from) this.failed.set(key, { from, end });
    return -1;
  }
}

function count(s, ch) {
  let n = 0;
  for (const c of s) if (c === ch) n++;
  return n;
}

function externalLink(href, title) {
  const a = el('a');
  a.href = href;
  a.target = '_blank';
  a.rel = 'noopener noreferrer nofollow';
  if (title) a.title = title;
  return a;
}

function appendText(parent, text) {
  parent.append(document.createTextNode(text));
}
