// Syntax highlighting for code blocks and cells: a small tokenizer for Python and for shell that
// returns a DocumentFragment of text nodes and <span class="tok-..."> elements whose text is set
// with textContent. The fragment's text is exactly the input: highlighting never adds, drops or
// reorders a character, and never parses the code as HTML.
//
//   parent.append(highlight(code, "python"));   // unknown languages come back as plain text

const PY_KEYWORDS = new Set(
  ('False None True and as assert async await break class continue def del elif else except ' +
   'finally for from global if import in is lambda nonlocal not or pass raise return try while ' +
   'with yield match case')
    .split(' '));
const PY_BUILTINS = new Set(
  ('print len range int str float list dict set tuple bool type isinstance open enumerate zip ' +
   'map filter sorted reversed sum min max abs round repr super object self cls any all iter ' +
   'next hasattr getattr setattr format input id hash vars dir Exception ValueError TypeError ' +
   'KeyError IndexError RuntimeError')
    .split(' '));
const SH_KEYWORDS = new Set(
  'if then else elif fi for while until do done case esac in function return export local set'
    .split(' '));

const LANGUAGES = {
  python: tokenizePython, py: tokenizePython, python3: tokenizePython, ipython: tokenizePython,
  bash: tokenizeShell, sh: tokenizeShell, shell: tokenizeShell, zsh: tokenizeShell,
  console: tokenizeShell,
};

// REQUIRES: nothing; any string is accepted. `lang` is matched case-insensitively.
export function highlight(code, lang) {
  const text = String(code ?? '');
  const tokenize = LANGUAGES[String(lang || '').toLowerCase()];
  const frag = document.createDocumentFragment();
  if (!tokenize) {
    frag.append(document.createTextNode(text));
    return frag;
  }
  let plain = '';
  const flush = () => {
    if (plain) frag.append(document.createTextNode(plain));
    plain = '';
  };
  for (const [kind, piece] of tokenize(text)) {
    if (!kind) {
      plain += piece;
      continue;
    }
    flush();
    const span = document.createElement('span');
    span.className = 'tok-' + kind;
    span.textContent = piece;
    frag.append(span);
  }
  flush();
  return frag;
}

export function isHighlighted(lang) {
  return Boolean(LANGUAGES[String(lang || '').toLowerCase()]);
}

const IDENT = /[A-Za-z_][A-Za-z0-9_]*/y;
const PY_NUMBER = new RegExp(
  '(?:0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+|' +
  '(?:\\d[\\d_]*(?:\\.[\\d_]*)?|\\.\\d[\\d_]*)(?:[eE][+-]?\\d[\\d_]*)?[jJ]?)', 'y');
const PY_STRING_START = /[rRbBuUfF]{0,2}(?:'''|"""|'|")/y;

function matchAt(re, text, i) {
  re.lastIndex = i;
  const m = re.exec(text);
  return m ? m[0] : null;
}

function isIdentChar(c) {
  return c !== undefined && /[A-Za-z0-9_]/.test(c);
}

// Yields [kind, text] pairs; kind '' is plain text.
function* tokenizePython(text) {
  let i = 0;
  let afterDef = false;
  let lineStart = true;
  while (i < text.length) {
    const c = text[i];
    if (c === '\n') {
      lineStart = true;
      yield ['', c];
      i++;
      continue;
    }
    if (c === ' ' || c === '\t') {
      yield ['', c];
      i++;
      continue;
    }
    const atLineStart = lineStart;
    lineStart = false;
    if (c === '#') {
      let end = text.indexOf('\n', i);
      if (end < 0) end = text.length;
      yield ['com', text.slice(i, end)];
      i = end;
      continue;
    }
    const str = isIdentChar(text[i - 1]) ? null : matchAt(PY_STRING_START, text, i);
    if (str) {
      const quote = str.endsWith("'''") || str.endsWith('"""') ? str.slice(-3) : str.slice(-1);
      const end = stringEnd(text, i + str.length, quote);
      yield ['str', text.slice(i, end)];
      i = end;
      afterDef = false;
      continue;
    }
    if (/[0-9.]/.test(c) && !isIdentChar(text[i - 1])) {
      const num = matchAt(PY_NUMBER, text, i);
      if (num && num !== '.') {
        yield ['num', num];
        i += num.length;
        continue;
      }
    }
    if (c === '@' && atLineStart) {
      const name = matchAt(/@[A-Za-z_][A-Za-z0-9_.]*/y, text, i);
      if (name) {
        yield ['deco', name];
        i += name.length;
        continue;
      }
    }
    const ident = matchAt(IDENT, text, i);
    if (ident) {
      if (afterDef) yield ['fn', ident];
      else if (PY_KEYWORDS.has(ident)) yield ['kw', ident];
      else if (PY_BUILTINS.has(ident)) yield ['builtin', ident];
      else yield ['', ident];
      afterDef = ident === 'def' || ident === 'class';
      i += ident.length;
      continue;
    }
    afterDef = false;
    yield ['', c];
    i++;
  }
}

// The index just past the closing `quote` (or the end of the line for an unterminated one-line
// string, or the end of the text).
function stringEnd(text, i, quote) {
  const triple = quote.length === 3;
  while (i < text.length) {
    const c = text[i];
    if (c === '\\') {
      i += 2;
      continue;
    }
    if (!triple && c === '\n') return i;
    if (text.startsWith(quote, i)) return i + quote.length;
    i++;
  }
  return text.length;
}

function* tokenizeShell(text) {
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    const prev = text[i - 1];
    if (c === '#' && (i === 0 || /\s/.test(prev))) {
      let end = text.indexOf('\n', i);
      if (end < 0) end = text.length;
      yield ['com', text.slice(i, end)];
      i = end;
      continue;
    }
    if (c === "'") {
      let end = text.indexOf("'", i + 1);
      end = end < 0 ? text.length : end + 1;
      yield ['str', text.slice(i, end)];
      i = end;
      continue;
    }
    if (c === '"') {
      const end = stringEnd(text, i + 1, '"');
      yield ['str', text.slice(i, end)];
      i = end;
      continue;
    }
    if (c === '$') {
      const v = matchAt(/\$(?:\{[^}\n]*\}?|[A-Za-z_][A-Za-z0-9_]*|[0-9@#?*!$-])/y, text, i);
      if (v) {
        yield ['var', v];
        i += v.length;
        continue;
      }
    }
    const ident = isIdentChar(prev) ? null : matchAt(IDENT, text, i);
    if (ident) {
      yield [SH_KEYWORDS.has(ident) ? 'kw' : '', ident];
      i += ident.length;
      continue;
    }
    yield ['', c];
    i++;
  }
}
