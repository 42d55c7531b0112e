// The conversation of one session as DOM: the finished turns of GET /v1/sessions/{id}, then the
// events of the stream (docs/server.md "Events") as they come: the user's message, the model's
// text (Markdown), each cell as a collapsible block (code, streamed stdout/stderr, result or
// traceback, duration, figures, files), other tool calls, files, usage, the answer, errors.
//
// Every string from the server (model text, cell output, file names, tool arguments) reaches the
// DOM through textContent or renderMarkdown, never as HTML.
//
//   const conv = new Conversation(scrollElement, {fileUrl: (path, inline) => url,
//                                                onFork: (turnNumber, text) => ...});
//   conv.loadTurns(session.turns);      // turns 1..n, already finished
//   conv.handle(type, data);            // each event
//
// Turn numbers: turn k of a user_message is the k-th element of `turns` (1-based). When the
// stream replays a finished turn (after a reload), its steps and cells are put into that turn,
// before its answer, files and usage from `turns`, which are not repeated; a turn is never shown
// twice, and one that is not replayed keeps what `turns` says.

import { renderMarkdown } from './markdown.js';
import { highlight } from './highlight.js';

const kMaxOutputChars = 200000;  // of one cell's stdout+stderr kept in the page
// Statuses that end the turn in progress (the stream's `idle` can come before a turn's events,
// so it ends nothing: final and error do).
const TURN_ENDING = new Set(['cancelled', 'failed', 'completed', 'stopped', 'idle_timeout',
  'terminated', 'timed_out']);

function el(tag, className, text) {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
}

export function formatBytes(n) {
  if (!Number.isFinite(n)) return '';
  if (n < 1024) return n + ' B';
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let u = -1;
  do {
    v /= 1024;
    u++;
  } while (v >= 1024 && u < units.length - 1);
  return v.toFixed(v < 10 ? 1 : 0) + ' ' + units[u];
}

export function formatDuration(ms) {
  if (!Number.isFinite(ms)) return '';
  if (ms < 1000) return Math.round(ms) + ' ms';
  if (ms < 60000) return (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + ' s';
  const m = Math.floor(ms / 60000);
  return m + ' min ' + Math.round((ms % 60000) / 1000) + ' s';
}

function basename(path) {
  const s = String(path);
  return s.slice(s.lastIndexOf('/') + 1) || s;
}

function str(v) {
  return typeof v === 'string' ? v : v === undefined || v === null ? '' : String(v);
}

export class Conversation {
  constructor(root, options = {}) {
    this.root = root;  // the scrolling element that holds the turns
    this.fileUrl = options.fileUrl || (() => null);
    this.onFork = options.onFork || null;  // a numbered turn gets a "Fork here" button
    this.reset();
  }

  reset() {
    this.root.replaceChildren();
    this.historyCount = 0;
    this.turn = null;  // the turn the events go to
    this.lastTurn = null;  // the turn that ended last: files and usage may follow its answer
    this.history = new Map();  // turn number -> the turn loadTurns showed
    this.replaying = false;  // the events go into a turn of `history`
    this.skipping = false;  // the events are of a turn already shown (replayed twice)
    this.pending = [];  // user messages sent and not yet echoed by the stream
    this.renderQueued = new Set();
  }

  // The markdown options: sandbox paths in the model's text become this session's file URLs.
  markdownOptions() {
    return { sandboxUrl: (path, inline) => this.fileUrl(path, inline) };
  }

  // Keeps the view at the bottom when it was there before `fn` changed it.
  mutate(fn) {
    const r = this.root;
    const atBottom = r.scrollHeight - r.scrollTop - r.clientHeight < 80;
    const out = fn();
    if (atBottom) r.scrollTop = r.scrollHeight;
    return out;
  }

  scrollToEnd() {
    this.root.scrollTop = this.root.scrollHeight;
  }

  showEmpty(text) {
    this.mutate(() => this.root.append(el('p', 'empty', text)));
  }

  // A note of the page itself (not part of the conversation): an upload, a lost connection.
  note(text, kind = 'info') {
    return this.mutate(() => {
      const n = el('div', 'note note-' + kind, text);
      (this.turn ? this.turn.body : this.root).append(n);
      return n;
    });
  }

  loadTurns(turns) {
    this.mutate(() => {
      this.root.querySelector('.empty')?.remove();
      (Array.isArray(turns) ? turns : []).forEach((t, k) => {
        const turn = this.newTurn(str(t && t.task), k + 1);
        turn.output = str(t && t.output);
        if (t && t.output) turn.body.append(this.answer(turn.output));
        if (t && t.error) turn.body.append(el('div', 'note note-error', 'Error: ' + str(t.error)));
        if (t && Array.isArray(t.files) && t.files.length) {
          turn.body.append(this.fileList(t.files.map((p) => ({ path: p }))));
        }
        if (t && t.usage) this.showUsage(turn, t.usage);
        turn.anchor = turn.body.firstChild;  // replayed steps go before the answer
        turn.fromHistory = true;
        this.finishTurn(turn);
        this.history.set(k + 1, turn);
      });
      this.historyCount = Array.isArray(turns) ? turns.length : 0;
    });
    this.turn = null;
  }

  // Shows a message the user just sent, before the stream echoes it as user_message (a turn
  // still running goes on receiving its events: the session queues the message).
  addPending(text) {
    this.mutate(() => {
      const turn = this.newTurn(text, null);
      turn.el.classList.add('pending');
      this.pending.push(turn);
    });
    this.scrollToEnd();
  }

  // The stream did not take the message (the POST failed): drop its turn.
  dropPending(text) {
    const k = this.pending.findIndex((t) => t.text === text);
    if (k < 0) return;
    const [turn] = this.pending.splice(k, 1);
    turn.el.remove();
    if (this.turn === turn) this.turn = null;
  }

  newTurn(text, number) {
    const article = el('article', 'turn');
    if (number) article.dataset.turn = String(number);
    const user = el('div', 'msg msg-user');
    user.append(el('div', 'who', 'You'), el('div', 'user-text', text));
    const assistant = el('div', 'msg msg-assistant');
    const body = el('div', 'assistant-body');
    assistant.append(el('div', 'who', 'Assistant'), body);
    article.append(user, assistant);
    this.root.querySelector('.empty')?.remove();
    this.root.append(article);
    const turn = {
      el: article, body, text, number, steps: new Map(), cells: new Map(), tools: new Map(),
      usage: { input: 0, output: 0 }, usageEl: null, lastText: null,
    };
    this.addForkButton(turn);
    return turn;
  }

  // "Fork here": a new session with the turns before this one and their sandbox state, where
  // this message can be asked again or differently (POST /v1/sessions/{id}/fork).
  addForkButton(turn) {
    if (!this.onFork || !turn.number || turn.forkButton) return;
    const b = el('button', 'fork-button link-button', 'Fork here');
    b.type = 'button';
    b.title = 'Start a new session with the turns before this one and their sandbox state, ' +
      'to ask this again';
    const { number, text } = turn;
    b.addEventListener('click', () => this.onFork(number, text));
    turn.el.querySelector('.msg-user').append(b);
    turn.forkButton = b;
  }

  finishTurn(turn) {
    turn.el.classList.remove('busy');
    turn.el.removeAttribute('aria-busy');
  }

  // The turn events go to; one without a user message when the stream starts mid-turn.
  current() {
    if (!this.turn) {
      this.turn = this.newTurn('', null);
      this.turn.el.classList.add('no-user');
    }
    return this.turn;
  }

  setBusy(busy) {
    if (!this.turn) return;
    if (busy) {
      this.turn.el.classList.add('busy');
      this.turn.el.setAttribute('aria-busy', 'true');
    } else {
      this.finishTurn(this.turn);
    }
  }

  handle(type, data) {
    if (type === 'user_message') {
      const n = Number.isInteger(data.turn) ? data.turn : null;
      const old = n !== null ? this.history.get(n) : undefined;
      this.replaying = false;
      this.skipping = Boolean(old && old.replayed);
      if (this.skipping) return;
      if (old) {
        old.replayed = true;
        this.replaying = true;
        this.turn = old;
        this.lastTurn = null;
        return;
      }
      this.mutate(() => this.userMessage(str(data.text), n));
      return;
    }
    if (this.skipping || this.replaying) {
      if (type === 'final' || type === 'error') {
        if (this.replaying) this.mutate(() => this.endReplay());
        this.skipping = false;
        this.replaying = false;
        return;
      }
      // `turns` has the answer, files and usage of a finished turn already; the status of a
      // finished turn is not busy.
      if (this.skipping || ['files', 'usage', 'sandbox', 'status'].includes(type)) return;
      if (type === 'end') {
        this.turn = null;  // the replay is over without an answer
        this.replaying = false;
      }
    }
    const handler = this['on_' + type];
    if (typeof handler === 'function') this.mutate(() => handler.call(this, data));
  }

  // The replayed turn's last step text is the answer `turns` shows already: drop the copy.
  endReplay() {
    const turn = this.turn;
    if (turn && turn.lastText && turn.lastText.text.trim() === (turn.output || '').trim()) {
      turn.lastText.el.remove();
    }
    this.endTurn();
  }

  // The current turn is over; events that may follow its answer (files, usage) still go to it.
  endTurn() {
    if (this.turn) this.finishTurn(this.turn);
    this.lastTurn = this.turn;
    this.turn = null;
  }

  // True while a turn is in progress (the Stop button's state).
  busy() {
    return Boolean(this.turn && !this.replaying && this.turn.el.classList.contains('busy'));
  }

  // The turn that files and usage go to: the current one, else the one that just ended; null
  // when that one came from `turns` (which lists them already).
  trailingTurn() {
    const turn = this.turn || this.lastTurn || this.current();
    return turn.fromHistory && !this.turn ? null : turn;
  }

  // Adds `node` to the turn's body (in a replayed turn, before what `turns` showed).
  place(turn, node) {
    if (turn.anchor && turn.anchor.parentNode === turn.body) {
      turn.body.insertBefore(node, turn.anchor);
    } else {
      turn.body.append(node);
    }
  }

  userMessage(text, number) {
    this.lastTurn = null;
    const k = this.pending.findIndex((t) => t.text === text);
    if (k >= 0) {
      const [turn] = this.pending.splice(k, 1);
      turn.el.classList.remove('pending');
      turn.number = number;
      if (number) turn.el.dataset.turn = String(number);
      this.addForkButton(turn);
      this.turn = turn;
    } else {
      if (this.turn && !this.turn.number && this.turn.el.classList.contains('no-user')) {
        this.finishTurn(this.turn);
      }
      this.turn = this.newTurn(text, number);
    }
    this.setBusy(true);
  }

  on_step(data) {
    const turn = this.current();
    turn.step = data.step;
    if (!this.replaying) this.setBusy(true);
  }

  stepText(step) {
    const turn = this.current();
    const key = str(step);
    let s = turn.steps.get(key);
    if (!s) {
      s = { text: '', el: el('div', 'md assistant-text') };
      turn.steps.set(key, s);
      this.place(turn, s.el);
    }
    turn.lastText = s;
    return s;
  }

  renderStep(s) {
    const t0 = performance.now();
    s.el.replaceChildren(renderMarkdown(s.text, this.markdownOptions()));
    s.renderMs = performance.now() - t0;
  }

  on_text(data) {
    const s = this.stepText(data.step);
    s.text = str(data.text);
    this.renderStep(s);
  }

  on_text_delta(data) {
    const s = this.stepText(data.step);
    s.text += str(data.delta);
    // One render per frame however many deltas arrive, and for a long text (whose render takes
    // a while) at most one in five frames' time, so streaming never stalls the page.
    if (this.renderQueued.has(s)) return;
    this.renderQueued.add(s);
    const wait = Math.min(1000, 4 * (s.renderMs || 0));
    setTimeout(() => requestAnimationFrame(() => {
      this.renderQueued.delete(s);
      this.mutate(() => this.renderStep(s));
    }), wait);
  }

  on_cell(data) {
    const turn = this.current();
    const id = str(data.tool_call_id);
    const lang = data.language === 'bash' ? 'bash' : 'python';
    const early = turn.cells.get(id);
    if (early && early.placeholder) {
      // Its output came first (the live output is faster than the steps): fill in its code.
      early.code.className = 'language-' + lang;
      early.code.replaceChildren(highlight(str(data.code), lang));
      early.label.textContent = lang === 'bash' ? 'Shell' : 'Python';
      early.placeholder = false;
      return;
    }
    const details = el('details', 'cell running');
    details.open = true;
    const summary = el('summary', 'cell-summary');
    const label = el('span', 'cell-lang', lang === 'bash' ? 'Shell' : 'Python');
    const state = el('span', 'cell-state', 'running');
    const duration = el('span', 'cell-duration');
    summary.append(label, state, duration);
    const pre = el('pre', 'cell-code');
    const code = el('code', 'language-' + lang);
    code.append(highlight(str(data.code), lang));
    pre.append(code);
    const output = el('pre', 'cell-output');
    output.hidden = true;
    output.setAttribute('aria-label', 'Output');
    const result = el('div', 'cell-result');
    result.hidden = true;
    details.append(summary, pre, output, result);
    this.place(turn, details);
    turn.lastText = null;
    const cell = {
      details, state, duration, output, result, code, label, chars: 0, streamed: '', last: null,
      placeholder: false,
    };
    turn.cells.set(id, cell);
    if (!this.replaying) this.setBusy(true);
  }

  cellOf(id) {
    const turn = this.current();
    let cell = turn.cells.get(str(id));
    if (!cell) {
      this.on_cell({ tool_call_id: id, language: 'python', code: '' });
      cell = turn.cells.get(str(id));
      cell.placeholder = true;  // until its cell event brings the code
    }
    return cell;
  }

  on_cell_output(data) {
    const cell = this.cellOf(data.tool_call_id);
    const stream = data.stream === 'stderr' ? 'stderr' : 'stdout';
    let text = str(data.text);
    cell.streamed += text;
    if (cell.chars >= kMaxOutputChars) return;
    if (cell.chars + text.length > kMaxOutputChars) {
      text = text.slice(0, kMaxOutputChars - cell.chars) + '\n[output cut in the page]\n';
    }
    cell.chars += text.length;
    cell.output.hidden = false;
    if (cell.last && cell.last.stream === stream) {
      cell.last.node.appendData(text);
    } else {
      const span = el('span', 'stream-' + stream);
      const node = document.createTextNode(text);
      span.append(node);
      cell.output.append(span);
      cell.last = { stream, node };
    }
  }

  on_cell_result(data) {
    const cell = this.cellOf(data.tool_call_id);
    const ok = data.ok !== false;
    cell.details.classList.remove('running');
    cell.details.classList.add(ok ? 'ok' : 'failed');
    cell.state.textContent = ok ? 'done' : 'error';
    if (Number.isInteger(data.checkpoint) && data.checkpoint > 0) {
      // The checkpoint the cell's commit made (`codeact sandbox rewind ... --to N`).
      cell.details.dataset.checkpoint = String(data.checkpoint);
      cell.state.title = 'checkpoint ' + data.checkpoint;
    }
    if (Number.isFinite(data.duration_ms)) {
      cell.duration.textContent = formatDuration(data.duration_ms);
    }
    const text = str(data.text);
    cell.result.replaceChildren();
    // The result repeats the streamed output in the model's view: show only what is new.
    if (text.trim() && text.trim() !== cell.streamed.trim()) {
      const pre = el('pre', ok ? 'result-text' : 'result-text traceback', text);
      pre.setAttribute('aria-label', ok ? 'Result' : 'Error');
      cell.result.append(pre);
    }
    const images = Array.isArray(data.images) ? data.images : [];
    for (const path of images) {
      const src = this.fileUrl(str(path), true);
      if (!src) continue;
      const fig = el('figure', 'cell-figure');
      const img = el('img');
      img.alt = 'figure ' + basename(path);
      img.loading = 'lazy';
      img.src = src;
      const cap = el('figcaption');
      cap.append(this.fileLink(str(path)));
      fig.append(img, cap);
      cell.result.append(fig);
    }
    const files = (Array.isArray(data.files) ? data.files : [])
      .filter((p) => !images.includes(p)).map((p) => ({ path: p }));
    if (files.length) cell.result.append(this.fileList(files));
    cell.result.hidden = !cell.result.childNodes.length;
  }

  on_tool_call(data) {
    const turn = this.current();
    const details = el('details', 'cell tool running');
    const summary = el('summary', 'cell-summary');
    const state = el('span', 'cell-state', 'running');
    summary.append(el('span', 'cell-lang', 'Tool ' + str(data.tool_name)), state);
    let args = data.args;
    try {
      args = typeof args === 'string' ? args : JSON.stringify(args, null, 2);
    } catch {
      args = String(args);
    }
    const pre = el('pre', 'cell-code', args || '');
    const result = el('pre', 'result-text');
    result.hidden = true;
    details.append(summary, pre, result);
    this.place(turn, details);
    turn.lastText = null;
    turn.tools.set(str(data.tool_call_id), { details, state, result });
  }

  on_tool_result(data) {
    const turn = this.current();
    const tool = turn.tools.get(str(data.tool_call_id));
    if (!tool) return;
    const ok = data.ok !== false;
    tool.details.classList.remove('running');
    tool.details.classList.add(ok ? 'ok' : 'failed');
    tool.state.textContent = ok ? 'done' : 'error';
    tool.result.textContent = str(data.text);
    tool.result.classList.toggle('traceback', !ok);
    tool.result.hidden = !tool.result.textContent;
  }

  on_retry(data) {
    const turn = this.current();
    const id = str(data.tool_call_id);
    const box = turn.cells.get(id)?.result || turn.tools.get(id)?.details || turn.body;
    box.hidden = false;
    box.append(el('div', 'note note-warn', 'Sent back to the model: ' + str(data.text)));
  }

  on_sandbox(data) {
    if (data.resumed === true) {
      this.note('The sandbox was restored after a crash or restart; its variables and files are ' +
        'back.', 'warn');
    }
  }

  on_files(data) {
    const files = Array.isArray(data.files) ? data.files : [];
    const turn = this.trailingTurn();
    if (!files.length || !turn) return;
    this.place(turn, this.fileList(files));
  }

  on_usage(data) {
    const turn = this.trailingTurn();
    if (!turn) return;
    turn.usage.input += Number(data.input_tokens) || 0;
    turn.usage.output += Number(data.output_tokens) || 0;
    this.showUsage(turn, { input_tokens: turn.usage.input, output_tokens: turn.usage.output });
  }

  showUsage(turn, usage) {
    const input = Number(usage.input_tokens ?? usage.request_tokens);
    const output = Number(usage.output_tokens ?? usage.response_tokens);
    if (!Number.isFinite(input) && !Number.isFinite(output)) return;
    if (!turn.usageEl) {
      turn.usageEl = el('div', 'usage');
      turn.el.append(turn.usageEl);
    }
    turn.usageEl.textContent = 'tokens: ' + (Number.isFinite(input) ? input : '?') + ' in, ' +
      (Number.isFinite(output) ? output : '?') + ' out';
  }

  on_final(data) {
    const turn = this.current();
    const text = str(data.text);
    // In durable mode the last step's text is the answer: mark it rather than repeat it.
    if (turn.lastText && turn.lastText.text.trim() === text.trim()) {
      turn.lastText.el.classList.add('answer');
    } else if (text) {
      this.place(turn, this.answer(text));
    }
    this.endTurn();
  }

  on_error(data) {
    const note = el('div', 'note note-error', 'Error: ' + str(data.message));
    if (this.turn) this.place(this.turn, note);
    else this.root.append(note);
    this.endTurn();
  }

  on_turn_cancelled() {
    const note = el('div', 'note', 'Stopped. The session goes on: send the next message.');
    if (this.turn) this.place(this.turn, note);
    else this.root.append(note);
    this.endTurn();
  }

  on_status(data) {
    if (!this.turn) return;
    const s = str(data.status);
    if (s === 'running' || s === 'starting' || s === 'finishing') this.setBusy(true);
    else if (TURN_ENDING.has(s)) this.endTurn();
  }

  on_end() {
    this.endTurn();
  }

  answer(text) {
    const div = el('div', 'md assistant-text answer');
    div.append(renderMarkdown(text, this.markdownOptions()));
    return div;
  }

  fileLink(path, size) {
    const url = this.fileUrl(path, false);
    const label = path + (Number.isFinite(size) ? ' (' + formatBytes(size) + ')' : '');
    if (!url) return el('span', 'file', label);
    const a = el('a', 'file', label);
    a.href = url;
    a.download = basename(path);
    return a;
  }

  fileList(files) {
    const box = el('div', 'files');
    box.append(el('div', 'files-title', 'Files'));
    const ul = el('ul');
    for (const f of files) {
      // {"path", "size", "mtime"}, or a path alone.
      const path = typeof f === 'string' ? f : str(f && f.path);
      if (!path) continue;
      const li = el('li');
      li.append(this.fileLink(path, typeof f === 'object' ? f.size : undefined));
      ul.append(li);
    }
    box.append(ul);
    return box;
  }
}
