// The ordered router chain and the fallback, edited locally and sent as
// one PUT /admin/config/routing. Each router's JSON is checked as it is
// typed; Save stays off while one does not parse.
import { useEffect, useState } from 'preact/hooks';
import { get, send } from '../api.js';
import { useAction } from '../hooks.js';
import { ErrorNote, Loading, Select } from '../ui.jsx';
import { ROUTER_TYPES, template, describe } from './router_text.jsx';

let nextKey = 1;

function item(router) {
  return { key: nextKey++, text: JSON.stringify(router, null, 2), value: router, error: '', editing: false };
}

function parse(text) {
  try {
    const v = JSON.parse(text);
    if (!v || typeof v !== 'object' || Array.isArray(v)) return [null, 'A router is a JSON object.'];
    if (typeof v.type !== 'string') return [null, 'A router needs a "type" (header, userGroup, protocolBased, queryRegex or tags).'];
    return [v, ''];
  } catch (e) {
    return [null, `Not valid JSON: ${e.message}`];
  }
}

function RouterCard({ it, index, count, onChange, onMove, onRemove }) {
  const n = index + 1;
  const [title, lines] = it.value ? describe(it.value) : ['(does not parse)', []];
  const id = `router-${it.key}`;
  return (
    <li class={`router-card${it.error ? ' invalid' : ''}`}>
      <div class="router-head">
        <span class="router-n" aria-hidden="true">{n}</span>
        <h3>
          <span class="sr-only">Router {n}: </span>
          <code>{it.value?.type ?? '?'}</code> <span class="muted">matches {title}</span>
        </h3>
        <div class="router-buttons">
          <button type="button" class="small" disabled={index === 0} onClick={() => onMove(-1)} aria-label={`Move router ${n} up`}>Up</button>
          <button type="button" class="small" disabled={index === count - 1} onClick={() => onMove(1)} aria-label={`Move router ${n} down`}>Down</button>
          <button type="button" class="small" aria-expanded={it.editing} aria-controls={id}
            onClick={() => onChange({ editing: !it.editing })} aria-label={`${it.editing ? 'Close the JSON of' : 'Edit'} router ${n}`}>
            {it.editing ? 'Done' : 'Edit JSON'}
          </button>
          <button type="button" class="small danger-outline" onClick={onRemove} aria-label={`Remove router ${n}`}>Remove</button>
        </div>
      </div>
      <ul class="rules">{lines}</ul>
      {it.editing ? (
        <div class="field wide" id={id}>
          <label for={`${id}-json`}>Router {n} JSON</label>
          <textarea id={`${id}-json`} class="mono" rows={Math.max(4, Math.min(16, it.text.split('\n').length + 1))} value={it.text}
            spellcheck={false} aria-invalid={!!it.error} aria-describedby={`${id}-err`}
            onInput={(e) => {
              const text = e.currentTarget.value;
              const [value, error] = parse(text);
              onChange({ text, error, value: value ?? it.value });
            }} />
          <small id={`${id}-err`} class={it.error ? 'hint bad' : 'hint'} role={it.error ? 'alert' : undefined}>
            {it.error || 'Valid JSON. The node checks the rest (group names, regex syntax) on save.'}
          </small>
        </div>
      ) : null}
    </li>
  );
}

export function RoutingEditor({ groups }) {
  const [items, setItems] = useState(null);
  const [fallback, setFallback] = useState('');
  const [dirty, setDirty] = useState(false);
  const [loadError, setLoadError] = useState(null);
  const [newType, setNewType] = useState('header');
  const [busy, error, run, setError] = useAction();
  const [saved, setSaved] = useState('');

  const apply = (routing) => {
    setItems((routing.routers || []).map(item));
    setFallback(routing.routingFallback || '');
    setDirty(false);
  };
  const load = () => get('/admin/config/routing').then(apply, setLoadError);
  useEffect(() => { load(); }, []);

  const change = (next) => { setItems(next); setDirty(true); setSaved(''); setError(null); };
  const update = (i, patch) => change(items.map((it, j) => (j === i ? { ...it, ...patch } : it)));
  const move = (i, d) => {
    const next = items.slice();
    [next[i], next[i + d]] = [next[i + d], next[i]];
    change(next);
  };
  const add = () => change([...items, { ...item(template(newType, groups[0])), editing: true }]);
  const invalid = items ? items.filter((it) => it.error).length : 0;

  const save = () => run(async () => {
    const body = { routers: items.map((it) => it.value), routingFallback: fallback || null };
    apply(await send('PUT', '/admin/config/routing', body));
    setSaved('Routing saved: the node routes with it now.');
  });

  return (
    <section class="card" aria-labelledby="h-routing">
      <h2 id="h-routing">Routing</h2>
      <p class="lead">Routers are tried in order; the first that routes or denies a query wins. When none matches, the fallback group takes it.</p>
      {loadError ? <ErrorNote error={loadError} /> : null}
      {!items && !loadError ? <Loading what="the routing" /> : null}
      {items ? (
        <>
          {items.length
            ? <ol class="router-chain">{items.map((it, i) => (
              <RouterCard key={it.key} it={it} index={i} count={items.length}
                onChange={(p) => update(i, p)} onMove={(d) => move(i, d)}
                onRemove={() => change(items.filter((_, j) => j !== i))} />
            ))}</ol>
            : <p class="empty">No router: every query goes to the fallback group.</p>}
          <div class="toolbar">
            <div class="field inline">
              <label for="new-router-type">New router type</label>
              <Select id="new-router-type" value={newType} onChange={setNewType} options={ROUTER_TYPES} />
            </div>
            <button type="button" onClick={add}>Add router</button>
          </div>
          <div class="field inline">
            <label for="routing-fallback">Routing fallback</label>
            <Select id="routing-fallback" value={fallback} onChange={(v) => { setFallback(v); setDirty(true); setSaved(''); }}
              options={[{ value: '', label: '(none: refuse unrouted queries)' }, ...groups]} />
          </div>
          {invalid ? <div class="note error" role="alert">{invalid === 1 ? 'One router does' : `${invalid} routers do`} not parse: fix the JSON before saving.</div> : null}
          {error ? <ErrorNote error={error} /> : null}
          {saved ? <div class="note ok" role="status">{saved}</div> : null}
          <div class="form-actions">
            <button type="button" class="primary" disabled={busy || invalid > 0 || !dirty} onClick={save}>
              {busy ? 'Saving…' : 'Save routing'}
            </button>
            <button type="button" disabled={busy || !dirty} onClick={() => { setError(null); load(); }}>Discard changes</button>
            {dirty ? <span class="muted">Unsaved changes</span> : null}
          </div>
        </>
      ) : null}
    </section>
  );
}
