// Times are shown in the browser's local time zone, the one the reader
// lives in; the ISO value goes in a title for the exact instant.

const pad = (n) => String(n).padStart(2, '0');

function toDate(t) {
  if (t === null || t === undefined || t === '' || t === 0) return null;
  const d = new Date(t);
  return Number.isNaN(d.getTime()) ? null : d;
}

/// "2026-12-05 14:03:07" in local time, or "" for no time.
export function localTime(t) {
  const d = toDate(t);
  if (!d) return '';
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/// Today's times without their date, which every row would repeat.
export function shortTime(t, now = new Date()) {
  const d = toDate(t);
  if (!d) return '';
  const today = d.getFullYear() === now.getFullYear() && d.getMonth() === now.getMonth() && d.getDate() === now.getDate();
  return today ? localTime(d).slice(11) : localTime(d).slice(0, 16);
}

export function isoTime(t) {
  const d = toDate(t);
  return d ? d.toISOString() : '';
}

export const hhmm = (t) => {
  const d = toDate(t);
  return d ? `${pad(d.getHours())}:${pad(d.getMinutes())}` : '';
};

/// "850 ms", "12.3 s", "4 min 05 s".
export function duration(ms) {
  if (ms === null || ms === undefined || ms < 0) return '';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(ms < 10000 ? 2 : 1)} s`;
  const m = Math.floor(ms / 60000);
  const s = Math.round((ms % 60000) / 1000);
  if (m < 60) return `${m} min ${pad(s)} s`;
  return `${Math.floor(m / 60)} h ${pad(m % 60)} min`;
}

/// "12 s ago", "5 min ago", "3 h ago", or the date for anything older.
export function ago(t, now = Date.now()) {
  const d = toDate(t);
  if (!d) return 'never';
  const s = Math.round((now - d.getTime()) / 1000);
  if (s < 5) return 'just now';
  if (s < 90) return `${s} s ago`;
  if (s < 5400) return `${Math.round(s / 60)} min ago`;
  if (s < 86400 * 2) return `${Math.round(s / 3600)} h ago`;
  return localTime(d);
}

export const num = (n) => (n === null || n === undefined ? '' : Number(n).toLocaleString('en-US'));

/// The value of an <input type="datetime-local"> for epoch ms, and back.
export function toLocalInput(ms) {
  const d = toDate(Number(ms));
  if (!d) return '';
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

export function fromLocalInput(value) {
  if (!value) return '';
  const ms = new Date(value).getTime();
  return Number.isNaN(ms) ? '' : String(ms);
}

export function shortRevision(rev) {
  if (!rev) return '';
  const hex = rev.replace(/^sha256:/, '');
  return hex.slice(0, 12);
}
