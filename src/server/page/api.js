// The page's client of the /v1 API (docs/server.md): same-origin fetch with the session cookie,
// the X-CSRF-Token header on every write, and errors as ApiError from the server's
// {"error": {"code", "message"}} body.
//
//   const api = new Api();
//   const me = await api.me();          // ApiError 401 (loginRequired) -> show the login form
//   await api.post('/v1/sessions/s-1/messages', {message: 'hi'});

export class ApiError extends Error {
  constructor(status, code, message, retryAfter) {
    super(message);
    this.status = status;  // 0: the server could not be reached
    this.code = code;
    this.retryAfter = retryAfter;
  }
  get loginRequired() {
    return this.status === 401;
  }
}

// `encodeURIComponent` of each segment of a sandbox path: "/output/a b.png" -> "output/a%20b.png".
export function encodePath(path) {
  return String(path).replace(/^\/+/, '').split('/').map(encodeURIComponent).join('/');
}

// The URL of the sandbox file `path` ("/output/plot.png") of session `id`, or null for a path
// with . or .. segments (the URL parser would resolve them to another endpoint).
export function sessionFileUrl(id, path, inline) {
  if (!id || typeof path !== 'string' || !path) return null;
  if (path.split('/').some((seg) => seg === '.' || seg === '..')) return null;
  return '/v1/sessions/' + encodeURIComponent(id) + '/files/' + encodePath(path) +
    (inline ? '?inline=1' : '');
}

export class Api {
  constructor() {
    this.csrfToken = '';
  }

  // GET /v1/me; keeps its csrf_token for later writes.
  async me() {
    const me = await this.request('GET', '/v1/me');
    if (me && me.csrf_token) this.csrfToken = me.csrf_token;
    return me;
  }

  async login(apiKey) {
    const r = await this.request('POST', '/v1/login', { api_key: apiKey });
    if (r && r.csrf_token) this.csrfToken = r.csrf_token;
    return r;
  }

  async logout() {
    await this.request('POST', '/v1/logout');
    this.csrfToken = '';
  }

  get(path) {
    return this.request('GET', path);
  }
  post(path, body) {
    return this.request('POST', path, body === undefined ? {} : body);
  }
  delete(path) {
    return this.request('DELETE', path);
  }

  // PUT of raw bytes (an upload); answers {"path", "size"}.
  put(path, blob) {
    return this.request('PUT', path, blob, 'application/octet-stream');
  }

  // The answer's JSON (null for an empty body). Throws ApiError.
  async request(method, path, body, contentType) {
    const headers = { Accept: 'application/json' };
    if (method !== 'GET' && method !== 'HEAD' && this.csrfToken) {
      headers['X-CSRF-Token'] = this.csrfToken;
    }
    let payload;
    if (body !== undefined) {
      if (contentType) {
        payload = body;
        headers['Content-Type'] = contentType;
      } else {
        payload = JSON.stringify(body);
        headers['Content-Type'] = 'application/json';
      }
    }
    let response;
    try {
      response = await fetch(path, {
        method,
        headers,
        body: payload,
        credentials: 'same-origin',
        cache: 'no-store',
        redirect: 'error',
      });
    } catch (e) {
      throw new ApiError(0, 'Unavailable', 'the server cannot be reached (' + e.message + ')');
    }
    const text = await response.text().catch(() => '');
    let json = null;
    if (text) {
      try {
        json = JSON.parse(text);
      } catch {
        json = null;
      }
    }
    if (!response.ok) {
      const err = json && typeof json.error === 'object' && json.error ? json.error : {};
      const message = typeof err.message === 'string' && err.message
        ? err.message : `${method} ${path}: HTTP ${response.status}`;
      const retry = parseInt(response.headers.get('Retry-After') || '', 10);
      throw new ApiError(response.status, String(err.code || 'Unknown'), message,
        Number.isFinite(retry) ? retry : undefined);
    }
    return json;
  }
}
