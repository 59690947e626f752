// Small shared pieces. Every state is said in words as well as colour.
import { useEffect, useRef } from 'preact/hooks';

const health = {
  HEALTHY: ['ok', 'healthy'],
  UNHEALTHY: ['bad', 'failing its health check'],
  PENDING: ['warn', 'waiting for its first health check'],
  UNKNOWN: ['muted', 'not checked: deactivated, or gone'],
};

export function HealthBadge({ status }) {
  const [tone, meaning] = health[status] || ['muted', ''];
  return <span class={`badge ${tone}`} title={meaning}>{status || 'UNKNOWN'}</span>;
}

const queryTones = { Success: 'ok', Failed: 'bad', Cancelled: 'warn', Denied: 'bad' };

export function StatusBadge({ status }) {
  return <span class={`badge ${queryTones[status] || 'muted'}`}>{status}</span>;
}

export function Badge({ tone = 'muted', children, title }) {
  return <span class={`badge ${tone}`} title={title}>{children}</span>;
}

/// An error in words, next to what it is about.
export function ErrorNote({ error, children }) {
  if (!error && !children) return null;
  const text = error ? error.message || String(error) : '';
  return (
    <div class="note error" role="alert">
      {text}
      {children}
    </div>
  );
}

export function Loading({ what = '' }) {
  return <p class="loading" role="status">Loading{what ? ` ${what}` : ''}…</p>;
}

export function Empty({ children }) {
  return <div class="empty">{children}</div>;
}

export function PageHeader({ title, children, updated }) {
  return (
    <header class="page-head">
      <h1>{title}</h1>
      <div class="page-actions">
        {updated ? <span class="updated" aria-live="off">Updated {new Date(updated).toLocaleTimeString()}</span> : null}
        {children}
      </div>
    </header>
  );
}

/// A label and its control; `hint` explains defaults and units.
export function Field({ id, label, hint, children, wide }) {
  return (
    <div class={`field${wide ? ' wide' : ''}`}>
      <label for={id}>{label}</label>
      {children}
      {hint ? <small id={`${id}-hint`} class="hint">{hint}</small> : null}
    </div>
  );
}

/// `described`: its Field has a hint, which the input points at.
export function TextInput({ id, value, onInput, type = 'text', described, ...rest }) {
  return (
    <input id={id} type={type} value={value ?? ''} aria-describedby={described ? `${id}-hint` : undefined}
      onInput={(e) => onInput(e.currentTarget.value)} {...rest} />
  );
}

export function Checkbox({ id, label, checked, onChange, hint }) {
  return (
    <div class="field check">
      <input id={id} type="checkbox" checked={!!checked} onChange={(e) => onChange(e.currentTarget.checked)}
        aria-describedby={hint ? `${id}-hint` : undefined} />
      <label for={id}>{label}</label>
      {hint ? <small id={`${id}-hint`} class="hint">{hint}</small> : null}
    </div>
  );
}

export function Select({ id, value, onChange, options, ...rest }) {
  return (
    <select id={id} value={value ?? ''} onChange={(e) => onChange(e.currentTarget.value)} {...rest}>
      {options.map((o) => (typeof o === 'string'
        ? <option value={o}>{o}</option>
        : <option value={o.value}>{o.label}</option>))}
    </select>
  );
}

/// An on/off switch: a checkbox with role=switch, so it reads "on"/"off".
export function Switch({ id, label, checked, onChange, disabled }) {
  return (
    <span class="switch-wrap">
      <label class="switch" for={id}>
        <input id={id} type="checkbox" role="switch" checked={checked} disabled={disabled}
          onChange={(e) => onChange(e.currentTarget.checked)} />
        <span class="track" aria-hidden="true" />
        <span class="sr-only">{label}</span>
      </label>
      <span class="switch-text" aria-hidden="true">{checked ? 'on' : 'off'}</span>
    </span>
  );
}

/// A modal question (native <dialog>: focus stays inside, Escape cancels).
export function ConfirmDialog({ title, children, confirmLabel, busy, error, onConfirm, onCancel }) {
  const ref = useRef(null);
  useEffect(() => {
    const d = ref.current;
    if (d && !d.open) d.showModal();
    return () => d && d.open && d.close();
  }, []);
  return (
    <dialog ref={ref} class="dialog" aria-labelledby="dialog-title"
      onCancel={(e) => { e.preventDefault(); onCancel(); }}>
      <h2 id="dialog-title">{title}</h2>
      <div class="dialog-body">{children}</div>
      <ErrorNote error={error} />
      <div class="dialog-actions">
        <button type="button" onClick={onCancel}>Cancel</button>
        <button type="button" class="danger" disabled={busy} onClick={onConfirm}>
          {busy ? 'Working…' : confirmLabel}
        </button>
      </div>
    </dialog>
  );
}

/// A bar and "3 / 8" for a count against its limit.
export function Meter({ value, max, label }) {
  const pct = max > 0 ? Math.min(100, Math.round((value / max) * 100)) : 0;
  const tone = pct >= 100 ? 'bad' : pct >= 80 ? 'warn' : 'ok';
  return (
    <span class="meter" title={`${label ? `${label}: ` : ''}${value} of ${max}`}>
      <span class="meter-text">{value} / {max}</span>
      <span class={`meter-bar ${tone}`} aria-hidden="true"><span class={`fill w${Math.round(pct / 5) * 5}`} /></span>
    </span>
  );
}

// A sentence carried from a form to the page it returns to ("Cluster x
// added."), read once by that page.
let pendingNotice = '';
export const setNotice = (text) => { pendingNotice = text; };
export function takeNotice() {
  const text = pendingNotice;
  pendingNotice = '';
  return text;
}

export function Notice({ text, onClose }) {
  if (!text) return null;
  return (
    <div class="note ok" role="status">
      {text}
      <button type="button" class="link close" onClick={onClose} aria-label="Dismiss">Dismiss</button>
    </div>
  );
}
