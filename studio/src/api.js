// The one way Studio talks to the node: same-origin fetches carrying the
// session cookie, the CSRF token on every change, and errors turned into
// sentences before any page sees them.

let csrfToken = '';
let unauthorized = () => {};

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

/// Called with no argument whenever the node answers 401: the session is
/// gone (expired, logged out elsewhere, or the admin password changed).
export function onUnauthorized(fn) {
  unauthorized = fn;
}

export function setCsrfToken(token) {
  csrfToken = token || '';
}

const reasons = {
  400: 'The node refused the request as malformed.',
  403: 'The node refused the request.',
  404: 'Not found.',
  409: 'The change conflicts with the current configuration.',
  500: 'The node refused the change and undid it.',
  502: 'The node could not be reached through the proxy.',
  503: 'The node has no active configuration right now.',
};

async function errorOf(res) {
  let text = '';
  try {
    text = await res.text();
    const body = JSON.parse(text);
    if (body && typeof body.error === 'string' && body.error) return new ApiError(res.status, body.error);
  } catch {
    // not JSON: fall back to words of our own, never the raw body
  }
  return new ApiError(res.status, reasons[res.status] || `The node answered ${res.status} ${res.statusText}.`.trim());
}

/// fetch, then the parsed JSON (null for an empty body). Throws ApiError.
export async function api(path, { method = 'GET', body, signal } = {}) {
  // Marks the page's own request: the node then answers 401 without its
  // Basic challenge, which would make the browser pop up its login box.
  const headers = { Accept: 'application/json', 'X-Requested-With': 'XMLHttpRequest' };
  if (method !== 'GET' && method !== 'HEAD') {
    // The server refuses a change without it (403); SameSite=Strict is the
    // first lock, this is the second.
    if (csrfToken) headers['X-QueryFlux-CSRF'] = csrfToken;
  }
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let res;
  try {
    res = await fetch(path, {
      method, headers, signal, credentials: 'same-origin',
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError(0, 'Cannot reach the QueryFlux node. Is it running?');
  }
  if (res.status === 401 && !path.startsWith('/studio/api/login')) {
    unauthorized();
    throw new ApiError(401, 'Your session has ended. Log in again.');
  }
  if (!res.ok) throw await errorOf(res);
  const text = await res.text();
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch {
    throw new ApiError(res.status, 'The node sent an answer Studio cannot read.');
  }
}

export const get = (path, opts) => api(path, opts);
export const send = (method, path, body) => api(path, { method, body });

/// A query string from an object, leaving out empty values.
export function qs(params) {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== '') p.set(k, String(v));
  }
  const s = p.toString();
  return s ? `?${s}` : '';
}

export const enc = encodeURIComponent;

// Sessions.
export const session = () => api('/studio/api/session');
export const login = (username, password) => api('/studio/api/login', { method: 'POST', body: { username, password } });
export const logout = () => api('/studio/api/logout', { method: 'POST' });
