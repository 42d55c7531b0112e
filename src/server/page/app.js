// The chat page of `codeact server` (docs/server.md): login, the session list, one session's
// conversation with its live event stream, the composer, uploads. The server sends index.html at
// / and this directory's other files at /assets/NAME.
//
// The URL is the state: #/sessions/ID shows that session (?session=ID is accepted and rewritten
// to it), #/ a new chat. Everything else is re-derived from the server: on opening a session the
// page reads its finished turns (GET /v1/sessions/{id}), then follows its event stream, which
// replays the events of the turn in progress, so a reload or a second tab shows the whole
// conversation and keeps streaming.

import { Api, ApiError, sessionFileUrl } from './api.js';
import { Conversation, formatBytes } from './conversation.js';
import { EventFeed } from './events.js';
import { SessionList, STATUS_TEXT, sessionHash } from './sessions.js';

const $ = (id) => document.getElementById(id);
const BUSY = new Set(['starting', 'running', 'finishing']);
// Statuses after which the session's sandbox is gone (a cancelled turn leaves it running).
const ENDED = new Set(
  ['completed', 'failed', 'stopped', 'idle_timeout', 'terminated', 'timed_out']);

const api = new Api();
const state = {
  me: null,
  sessionId: null,  // the session shown, or null for a new chat
  status: '',
  feed: null,
  view: 0,  // incremented on every navigation; late answers of an older view are dropped
  retryTimer: 0,
  retryDelay: 1000,
  carryPending: null,  // {id, text}: the first message of a session just created
  sending: false,
  sandbox: '',  // the sandbox pill: '', 'running', 'restored', 'stopped'
  deleted: new Set(),  // ids of the sessions deleted from this page
};

let conversation;
let sessionList;

// The URL of a sandbox file of the session shown (null without one).
function fileUrl(path, inline) {
  return sessionFileUrl(state.sessionId, path, inline);
}

// ---------------------------------------------------------------------------------------------
// Feedback: the banner (connection), the toast (errors), the status pills.

function showBanner(text) {
  const b = $('banner');
  b.textContent = text;
  b.hidden = false;
}

function hideBanner() {
  $('banner').hidden = true;
}

let toastTimer = 0;
function toast(text) {
  const t = $('toast');
  t.textContent = text;
  t.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { t.hidden = true; }, 8000);
}

function reportError(e, what) {
  if (e instanceof ApiError && e.loginRequired) {
    showLogin();
    return;
  }
  let text = (what ? what + ': ' : '') + (e && e.message ? e.message : String(e));
  if (e instanceof ApiError && e.retryAfter) text += ` (try again in ${e.retryAfter} s)`;
  toast(text);
}

function setStatus(status, message) {
  state.status = status || '';
  $('status-pill').title = message || '';
  updateStop();
  if (ENDED.has(status)) setSandbox('stopped');
}

// The status pill and Stop: busy while the session says so or a turn's events are still coming
// (the stream's status can say idle before a turn's first step).
function updateStop() {
  const turnRunning = Boolean(conversation && conversation.busy());
  const shown = state.status === 'idle' && turnRunning ? 'running' : state.status;
  const pill = $('status-pill');
  pill.hidden = !shown;
  pill.textContent = STATUS_TEXT[shown] || shown || '';
  pill.className = 'pill status-' + (shown || 'none');
  $('stop-button').disabled = !(BUSY.has(state.status) || turnRunning);
}

function setSandbox(what, sandboxId) {
  state.sandbox = what;
  const pill = $('sandbox-pill');
  const text = { running: 'sandbox running', restored: 'sandbox restored after a crash',
    stopped: 'sandbox stopped' }[what];
  pill.hidden = !text;
  pill.textContent = text || '';
  pill.className = 'pill sandbox-' + what;
  if (sandboxId) pill.title = 'sandbox ' + sandboxId;
}

// ---------------------------------------------------------------------------------------------
// Login

// The login form; after a signed-in page loses its session (401: it expired, or the server
// restarted and forgot it) it says so. The URL stays, so signing in again reopens the session.
function showLogin(message) {
  closeFeed();
  hideBanner();
  if (!message && state.me) message = 'Your sign-in has ended. Sign in again.';
  state.me = null;
  $('app-view').hidden = true;
  $('login-view').hidden = false;
  const err = $('login-error');
  err.hidden = !message;
  err.textContent = message || '';
  $('login-key').focus();
}

async function onLogin(ev) {
  ev.preventDefault();
  const input = $('login-key');
  const key = input.value;
  input.value = '';
  if (!key) return;
  $('login-submit').disabled = true;
  try {
    await api.login(key);
    await start();
  } catch (e) {
    const text = e instanceof ApiError && (e.status === 401 || e.status === 403)
      ? 'That key was not accepted.' : e.message;
    showLogin(text);
  } finally {
    $('login-submit').disabled = false;
  }
}

async function onLogout() {
  try {
    await api.logout();
  } catch (e) {
    reportError(e, 'sign out');
    return;
  }
  state.me = null;
  showLogin();
}

// ---------------------------------------------------------------------------------------------
// Sessions

async function refreshSessions() {
  try {
    const r = await api.get('/v1/sessions');
    const sessions = Array.isArray(r && r.sessions) ? r.sessions : [];
    // The server goes on listing a deleted session (as terminated): this page drops it.
    sessionList.render(sessions.filter((s) => !state.deleted.has(s && s.id)), state.sessionId);
  } catch (e) {
    if (e instanceof ApiError && e.loginRequired) showLogin();
  }
}

let refreshTimer = 0;
function refreshSessionsSoon() {
  clearTimeout(refreshTimer);
  refreshTimer = setTimeout(refreshSessions, 500);
}

async function deleteSession(s) {
  const name = s.title || s.id;
  if (!window.confirm(`Delete the session "${name}"? Its sandbox and files are removed.`)) return;
  try {
    await api.delete('/v1/sessions/' + encodeURIComponent(s.id) + '?volume=true');
  } catch (e) {
    if (!(e instanceof ApiError && e.status === 404)) {
      reportError(e, 'delete');
      return;
    }
  }
  state.deleted.add(s.id);
  if (s.id === state.sessionId) window.location.hash = '#/';
  refreshSessions();
}

// ---------------------------------------------------------------------------------------------
// One session: its turns, then its event stream

function closeFeed() {
  clearTimeout(state.retryTimer);
  if (state.feed) state.feed.close();
  state.feed = null;
}

function routeId() {
  const m = /^#\/sessions\/([^/?#]+)$/.exec(window.location.hash);
  if (!m) return null;
  try {
    return decodeURIComponent(m[1]);
  } catch {
    return null;
  }
}

async function openSession(id) {
  const view = ++state.view;
  closeFeed();
  hideBanner();
  state.sessionId = id;
  state.retryDelay = 1000;
  conversation.reset();
  setStatus('');
  setSandbox('');
  $('upload-button').disabled = false;
  if (!id) {
    $('session-title').textContent = 'New chat';
    document.title = 'codeact';
    conversation.showEmpty('Ask for something: the assistant writes and runs Python in a ' +
      'sandbox of its own.');
    refreshSessions();
    $('composer-input').focus();
    return;
  }
  await loadSession(view, id);
  refreshSessions();
}

async function loadSession(view, id) {
  let session;
  try {
    session = await api.get('/v1/sessions/' + encodeURIComponent(id));
  } catch (e) {
    if (view !== state.view) return;
    if (e instanceof ApiError && e.status === 404) {
      $('session-title').textContent = 'Session not found';
      conversation.showEmpty('There is no session ' + id + ' (or it is not yours).');
      return;
    }
    if (e instanceof ApiError && e.loginRequired) {
      showLogin();
      return;
    }
    showBanner('Cannot load the session: ' + e.message + '. Retrying…');
    scheduleReload(view, id);
    return;
  }
  if (view !== state.view) return;
  const title = session.title || id;
  $('session-title').textContent = title;
  document.title = title + ' · codeact';
  conversation.reset();
  conversation.loadTurns(session.turns);
  if (state.carryPending && state.carryPending.id === id) {
    // The first message, until the stream echoes it (unless its turn has finished already).
    if (!conversation.historyCount) conversation.addPending(state.carryPending.text);
    state.carryPending = null;
  }
  setStatus(session.status);
  if (BUSY.has(session.status) || session.status === 'idle') {
    setSandbox('running', session.sandbox_id);
  }
  conversation.scrollToEnd();
  startFeed(view, id);
}

function startFeed(view, id) {
  const url = '/v1/sessions/' + encodeURIComponent(id) + '/events';
  state.feed = new EventFeed(url, {
    onOpen() {
      if (view !== state.view) return;
      state.retryDelay = 1000;
      hideBanner();
    },
    onLost(fatal) {
      if (view !== state.view) return;
      showBanner('Connection lost. Reconnecting…');
      if (fatal) scheduleReload(view, id);
    },
    onEvent(type, data) {
      if (view !== state.view) return;
      onEvent(type, data);
    },
  });
}

// The browser stopped retrying: reload the whole view (turns and a new stream) after a back-off.
function scheduleReload(view, id) {
  closeFeed();
  const delay = state.retryDelay;
  state.retryDelay = Math.min(state.retryDelay * 2, 30000);
  state.retryTimer = setTimeout(() => {
    if (view !== state.view) return;
    loadSession(view, id);
  }, delay);
}

function onEvent(type, data) {
  switch (type) {
    case 'status':
      setStatus(data.status, data.message);
      if ((data.status === 'running' || data.status === 'idle') && state.sandbox !== 'restored') {
        setSandbox('running', data.sandbox_id);
      }
      refreshSessionsSoon();
      break;
    case 'sandbox':
      setSandbox(data.resumed === true ? 'restored' : 'running', data.sandbox_id);
      break;
    case 'end':
      setStatus(data.status || 'completed');
      conversation.note('This session has ended (' + (data.status || 'completed') + '). Start a ' +
        'new chat to go on.');
      refreshSessionsSoon();
      break;
    case 'shutdown':
      showBanner('The server is restarting. Reconnecting…');
      return;  // the EventSource reconnects by itself
    default:
      break;
  }
  conversation.handle(type, data);
  updateStop();
}

// ---------------------------------------------------------------------------------------------
// Composer, stop, upload

async function send() {
  const input = $('composer-input');
  const text = input.value;
  if (!text.trim() || state.sending) return;
  state.sending = true;
  $('send-button').disabled = true;
  input.value = '';
  const id = state.sessionId;
  try {
    if (!id) {
      const s = await api.post('/v1/sessions', { message: text });
      if (!s || typeof s.id !== 'string') throw new Error('the server answered no session id');
      state.carryPending = { id: s.id, text };
      window.location.hash = sessionHash(s.id);  // -> openSession
    } else {
      conversation.addPending(text);
      await api.post('/v1/sessions/' + encodeURIComponent(id) + '/messages', { message: text });
      if (id === state.sessionId && !BUSY.has(state.status)) $('stop-button').disabled = false;
    }
  } catch (e) {
    if (id) conversation.dropPending(text);
    if (!input.value) input.value = text;
    reportError(e, 'send');
  } finally {
    state.sending = false;
    $('send-button').disabled = false;
  }
}

function onComposerKey(ev) {
  if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing && !ev.altKey && !ev.ctrlKey &&
      !ev.metaKey) {
    ev.preventDefault();
    send();
  }
}

// A new session from the turns before `turn` (docs/time-travel.md); the message of `turn` waits
// in the composer, to be sent as it was or changed first.
async function forkAt(turn, text) {
  const id = state.sessionId;
  if (!id) return;
  try {
    const s = await api.post('/v1/sessions/' + encodeURIComponent(id) + '/fork', { turn });
    if (!s || typeof s.id !== 'string') throw new Error('the server answered no session id');
    window.location.hash = sessionHash(s.id);  // -> openSession
    const input = $('composer-input');
    input.value = text;
    input.focus();
    refreshSessionsSoon();
  } catch (e) {
    reportError(e, 'fork');
  }
}

async function stop() {
  if (!state.sessionId) return;
  $('stop-button').disabled = true;
  try {
    await api.post('/v1/sessions/' + encodeURIComponent(state.sessionId) + '/cancel');
    conversation.note('Stopping the running turn…');
  } catch (e) {
    updateStop();
    reportError(e, 'stop');
  }
}

async function upload(files) {
  if (!files.length) return;
  let id = state.sessionId;
  try {
    if (!id) {
      // An upload before the first message starts the session without one.
      const s = await api.post('/v1/sessions', {});
      id = s.id;
      window.location.hash = sessionHash(id);
      await waitFor(() => state.sessionId === id && state.feed);
    }
    for (const f of files) {
      // Under /output, the cells' working directory: the next cell opens it by its name.
      const r = await api.put('/v1/sessions/' + encodeURIComponent(id) + '/files/output/' +
        encodeURIComponent(f.name), f);
      if (id === state.sessionId) {
        const path = (r && r.path) || '/output/' + f.name;
        conversation.note('Uploaded ' + path + ' (' + formatBytes(f.size) + '); cells open it ' +
          'as "' + f.name + '".');
      }
    }
  } catch (e) {
    reportError(e, 'upload');
  }
}

function waitFor(cond, timeoutMs = 10000) {
  return new Promise((resolve) => {
    const t0 = Date.now();
    const tick = () => {
      if (cond() || Date.now() - t0 > timeoutMs) resolve();
      else setTimeout(tick, 50);
    };
    tick();
  });
}

// ---------------------------------------------------------------------------------------------
// Start

async function start() {
  let me;
  try {
    me = await api.me();
  } catch (e) {
    if (e instanceof ApiError && e.loginRequired) {
      showLogin();
      return;
    }
    showBanner('Cannot reach the server (' + e.message + '). Retrying…');
    setTimeout(start, 3000);
    return;
  }
  hideBanner();
  state.me = me;
  $('principal').textContent = me && me.principal ? 'Signed in as ' + me.principal : '';
  $('logout').hidden = !(me && me.auth === 'cookie');
  $('login-view').hidden = true;
  $('app-view').hidden = false;
  await openSession(routeId());
}

function init() {
  // ?session=ID is an alias of #/sessions/ID.
  const q = new URLSearchParams(window.location.search).get('session');
  if (q) {
    window.history.replaceState(null, '', window.location.pathname + sessionHash(q));
  }
  conversation = new Conversation($('conversation'), { fileUrl, onFork: forkAt });
  sessionList = new SessionList($('session-list'), { onDelete: deleteSession });
  $('login-form').addEventListener('submit', onLogin);
  $('logout').addEventListener('click', onLogout);
  $('composer').addEventListener('submit', (ev) => {
    ev.preventDefault();
    send();
  });
  $('composer-input').addEventListener('keydown', onComposerKey);
  $('stop-button').addEventListener('click', stop);
  $('upload-button').addEventListener('click', () => $('upload-input').click());
  $('upload-input').addEventListener('change', (ev) => {
    const files = Array.from(ev.target.files || []);
    ev.target.value = '';
    upload(files);
  });
  window.addEventListener('hashchange', () => {
    if (state.me) openSession(routeId());
  });
  document.addEventListener('visibilitychange', () => {
    if (document.visibilityState === 'visible' && state.me) refreshSessions();
  });
  start();
}

init();
