// The sidebar's list of the caller's sessions (GET /v1/sessions, newest first): each a link to
// its URL (#/sessions/ID, so it opens in a new tab too) and a delete button.
//
//   const list = new SessionList(ul, {onDelete: (session) => ...});
//   list.render(sessions, currentId);

const ACTIVE = new Set(['starting', 'idle', 'running', 'finishing']);

// How the page names a status of docs/server.md.
export const STATUS_TEXT = {
  starting: 'starting', idle: 'ready', running: 'running', finishing: 'finishing',
  completed: 'ended', failed: 'failed', cancelled: 'cancelled', stopped: 'stopped',
  idle_timeout: 'ended (idle)', terminated: 'terminated', timed_out: 'timed out',
};

export function sessionHash(id) {
  return '#/sessions/' + encodeURIComponent(id);
}

function relativeTime(iso) {
  const t = Date.parse(iso);
  if (!Number.isFinite(t)) return '';
  const s = Math.round((Date.now() - t) / 1000);
  if (s < 60) return 'just now';
  if (s < 3600) return Math.floor(s / 60) + ' min ago';
  if (s < 86400) return Math.floor(s / 3600) + ' h ago';
  return new Date(t).toLocaleDateString();
}

export class SessionList {
  constructor(ul, { onDelete }) {
    this.ul = ul;
    this.onDelete = onDelete;
  }

  render(sessions, currentId) {
    const items = [];
    for (const s of sessions) {
      if (!s || typeof s.id !== 'string') continue;
      const li = document.createElement('li');
      li.className = 'session' + (ACTIVE.has(s.status) ? ' active' : '');
      const a = document.createElement('a');
      a.className = 'session-link';
      a.href = sessionHash(s.id);
      if (s.id === currentId) a.setAttribute('aria-current', 'page');
      const title = document.createElement('span');
      title.className = 'session-title';
      title.textContent = s.title || s.id;
      const meta = document.createElement('span');
      meta.className = 'session-meta';
      meta.textContent = [STATUS_TEXT[s.status] || s.status, relativeTime(s.created_at)]
        .filter(Boolean).join(' · ');
      a.append(title, meta);
      const del = document.createElement('button');
      del.type = 'button';
      del.className = 'icon-button session-delete';
      del.textContent = '\u00D7';
      del.setAttribute('aria-label', 'Delete session ' + (s.title || s.id));
      del.title = 'Delete session';
      del.addEventListener('click', () => this.onDelete(s));
      li.append(a, del);
      items.push(li);
    }
    if (!items.length) {
      const li = document.createElement('li');
      li.className = 'session-none';
      li.textContent = 'No sessions yet.';
      items.push(li);
    }
    this.ul.replaceChildren(...items);
  }
}
