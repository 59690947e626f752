// A hash router: "#/history/abc?user=bob" is { path: ['history', 'abc'],
// query: { user: 'bob' } }. State that belongs in a link (filters, paging)
// lives in the query so that back, forward and shared links keep it.
import { useEffect, useState } from 'preact/hooks';

export function parseHash(hash = location.hash) {
  const raw = hash.replace(/^#/, '');
  const q = raw.indexOf('?');
  const pathPart = q < 0 ? raw : raw.slice(0, q);
  const query = {};
  if (q >= 0) {
    for (const [k, v] of new URLSearchParams(raw.slice(q + 1))) query[k] = v;
  }
  const path = pathPart.split('/').filter(Boolean).map(decodeURIComponent);
  return { path, query };
}

/// "#/a/b?x=1" from (['a', 'b'] or '/a/b', { x: 1 }); empty values dropped.
export function href(path, query = {}) {
  const p = Array.isArray(path) ? `/${path.map(encodeURIComponent).join('/')}` : path;
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v !== undefined && v !== null && v !== '') params.set(k, String(v));
  }
  const s = params.toString();
  return `#${p}${s ? `?${s}` : ''}`;
}

export function navigate(path, query, { replace = false } = {}) {
  const target = href(path, query);
  if (target === location.hash) return;
  if (replace) {
    history.replaceState(null, '', target);
    // replaceState fires no hashchange: tell the listeners ourselves.
    window.dispatchEvent(new HashChangeEvent('hashchange'));
  } else {
    location.hash = target;
  }
}

export function useRoute() {
  const [route, setRoute] = useState(() => parseHash());
  useEffect(() => {
    const changed = () => setRoute(parseHash());
    window.addEventListener('hashchange', changed);
    return () => window.removeEventListener('hashchange', changed);
  }, []);
  return route;
}

// Where "back to history" goes: the list as the user last filtered it.
let lastHistory = '#/history';
export const rememberHistory = (hash) => { lastHistory = hash; };
export const historyHref = () => lastHistory;
