// Add or edit a cluster group. Members are an ordered list: the order is
// what the failover strategy follows.
import { useEffect, useState } from 'preact/hooks';
import { get, send, enc } from '../api.js';
import { useAction } from '../hooks.js';
import { navigate } from '../router.js';
import {
  ErrorNote, Loading, PageHeader, Field, TextInput, Checkbox, Select, setNotice,
} from '../ui.jsx';

const STRATEGIES = [
  { value: '', label: 'default (roundRobin)' },
  { value: 'roundRobin', label: 'roundRobin: each member in turn' },
  { value: 'leastLoaded', label: 'leastLoaded: fewest running queries' },
  { value: 'random', label: 'random' },
  { value: 'failover', label: 'failover: the first member that can take it' },
  { value: 'queryCountBased', label: "queryCountBased: fewest of the user's queued, then queued, then running" },
];

const LIMITS = [
  ['maxRunningQueries', 'Max running queries per cluster', 'The limit of each member that sets none of its own. Default: 10.'],
  ['maxQueuedQueries', 'Max queued queries', 'Waiting queries beyond this are refused at once. Default: 100.'],
  ['capacityWaitTimeoutSecs', 'Capacity wait timeout (s)', 'A query waiting longer for a slot fails. Default: 300.'],
];

function Members({ members, clusters, onChange }) {
  const [pick, setPick] = useState('');
  const free = clusters.filter((c) => !members.includes(c));
  const chosen = free.includes(pick) ? pick : free[0] || '';
  const move = (i, d) => {
    const next = members.slice();
    [next[i], next[i + d]] = [next[i + d], next[i]];
    onChange(next);
  };
  return (
    <fieldset>
      <legend>Members</legend>
      {members.length ? (
        <ol class="members">
          {members.map((m, i) => (
            <li>
              <span class="member-name">{m}</span>
              <button type="button" class="small" disabled={i === 0} onClick={() => move(i, -1)} aria-label={`Move ${m} up`}>Up</button>
              <button type="button" class="small" disabled={i === members.length - 1} onClick={() => move(i, 1)} aria-label={`Move ${m} down`}>Down</button>
              <button type="button" class="small danger-outline" onClick={() => onChange(members.filter((x) => x !== m))} aria-label={`Remove member ${m}`}>Remove</button>
            </li>
          ))}
        </ol>
      ) : <p class="muted">No member yet: a group needs at least one cluster to run queries.</p>}
      {free.length ? (
        <div class="toolbar">
          <div class="field inline">
            <label for="group-add-member">Cluster to add</label>
            <Select id="group-add-member" value={chosen} onChange={setPick} options={free} />
          </div>
          <button type="button" onClick={() => chosen && onChange([...members, chosen])}>Add member</button>
        </div>
      ) : <p class="muted small">Every cluster is a member already.</p>}
    </fieldset>
  );
}

export function GroupForm({ name }) {
  const adding = !name;
  const [original, setOriginal] = useState(adding ? {} : null);
  const [f, setF] = useState(null);
  const [clusters, setClusters] = useState([]);
  const [loadError, setLoadError] = useState(null);
  const [busy, error, run] = useAction();
  const [checks, setChecks] = useState([]);

  useEffect(() => {
    const item = adding ? Promise.resolve({}) : get(`/admin/config/groups/${enc(name)}`);
    Promise.all([item, get('/admin/config/clusters')]).then(([g, cs]) => {
      setOriginal(g);
      setClusters(cs.map((c) => c.name));
      setF({
        name: g.name || '',
        enabled: g.enabled !== false,
        members: g.members || [],
        strategy: g.strategy?.type || '',
        ...Object.fromEntries(LIMITS.map(([k]) => [k, g[k] === undefined ? '' : String(g[k])])),
      });
    }, setLoadError);
  }, [name]);

  const set = (key, value) => setF((old) => ({ ...old, [key]: value }));

  const save = (e) => {
    e.preventDefault();
    const found = [];
    if (adding && !/^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/.test(f.name)) found.push('Name: 1 to 128 letters, digits, "_", "-" or ".", starting with a letter or digit.');
    for (const [k, label] of LIMITS) {
      if (f[k].trim() && !/^\d+$/.test(f[k].trim())) found.push(`${label}: a whole number.`);
    }
    setChecks(found);
    if (found.length) return;
    // Keys this form does not know go back as they were.
    const body = { ...original, members: f.members };
    delete body.name;
    if (f.enabled) delete body.enabled; else body.enabled = false;
    for (const [k] of LIMITS) {
      if (f[k].trim()) body[k] = Number(f[k].trim()); else delete body[k];
    }
    if (f.strategy) body.strategy = { type: f.strategy }; else delete body.strategy;
    run(async () => {
      const n = adding ? f.name.trim() : name;
      if (adding) await send('POST', '/admin/config/groups', { name: n, ...body });
      else await send('PUT', `/admin/config/groups/${enc(n)}`, { name: n, ...body });
      setNotice(`Group ${n} ${adding ? 'added' : 'saved'}.${adding ? ' Route queries to it with a router or the fallback below.' : ''}`);
      navigate('/groups');
    });
  };

  const title = adding ? 'Add group' : `Edit group ${name}`;
  if (loadError) return <><PageHeader title={title} /><ErrorNote error={loadError} /><p><a href="#/groups">Back to groups</a></p></>;
  if (!f) return <><PageHeader title={title} /><Loading what="the group" /></>;
  return (
    <>
      <PageHeader title={title} />
      <form class="form card" onSubmit={save} noValidate aria-label={title}>
        <fieldset>
          <legend>Group</legend>
          <Field id="group-name" label="Name" hint={adding ? 'Letters, digits, "_", "-" and ".".' : 'The name cannot change.'}>
            <TextInput id="group-name" value={f.name} onInput={(v) => set('name', v)} readOnly={!adding} described autocomplete="off" spellcheck={false} />
          </Field>
          <Checkbox id="group-enabled" label="Enabled" checked={f.enabled} onChange={(v) => set('enabled', v)} hint="A disabled group refuses queries." />
          <Field id="group-strategy" label="Strategy" hint="How a member is picked among the healthy, active ones under their limit.">
            <Select id="group-strategy" value={f.strategy} onChange={(v) => set('strategy', v)} options={STRATEGIES} aria-describedby="group-strategy-hint" />
          </Field>
          {LIMITS.map(([k, label, hint]) => (
            <Field id={`group-${k}`} label={label} hint={hint}>
              <TextInput id={`group-${k}`} value={f[k]} onInput={(v) => set(k, v)} inputmode="numeric" described />
            </Field>
          ))}
        </fieldset>
        <Members members={f.members} clusters={clusters} onChange={(m) => set('members', m)} />
        {checks.length ? <div class="note error" role="alert"><ul>{checks.map((c) => <li>{c}</li>)}</ul></div> : null}
        {error ? <ErrorNote error={error} /> : null}
        <div class="form-actions">
          <button type="submit" class="primary" disabled={busy}>{busy ? 'Saving…' : adding ? 'Add group' : 'Save group'}</button>
          <a class="button" href="#/groups">Cancel</a>
        </div>
      </form>
    </>
  );
}
