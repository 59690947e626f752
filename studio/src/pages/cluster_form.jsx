// Add or edit one cluster. Edit loads the stored item and PUTs the whole
// item back; secrets come masked and go back masked, so the node keeps
// them. Secret inputs are password inputs: the mask, never a clear secret.
import { useState, useEffect } from 'preact/hooks';
import { get, send, enc } from '../api.js';
import { useAction } from '../hooks.js';
import { navigate } from '../router.js';
import {
  ErrorNote, Loading, PageHeader, Field, TextInput, Checkbox, Select, setNotice,
} from '../ui.jsx';
import {
  ENGINES, embedded, pooled, blank, fromItem, toItem, problems, unmanagedKeys, UNMANAGED_NOTE,
} from './cluster_model.js';

function EngineFields({ f, set }) {
  const e = f.engine;
  const input = (key, label, hint, { wide, ...props } = {}) => (
    <Field id={`cluster-${key}`} label={label} hint={hint} wide={wide}>
      <TextInput id={`cluster-${key}`} value={f[key]} onInput={(v) => set(key, v)} described={!!hint} {...props} />
    </Field>
  );
  if (embedded(e)) {
    return (
      <fieldset>
        <legend>{e === 'duckDb' ? 'DuckDB' : 'SQLite'} database</legend>
        {input('databasePath', 'Database path', 'A file on the node; empty: one in-memory database for the cluster.', { placeholder: 'in memory', wide: true })}
        <Field id="cluster-initSql" label="Init SQL" hint="Run once when the database opens: demo data, settings. Separate statements with ;." wide>
          <textarea id="cluster-initSql" rows="6" class="mono" value={f.initSql} aria-describedby="cluster-initSql-hint"
            onInput={(ev) => set('initSql', ev.currentTarget.value)} />
        </Field>
        <Checkbox id="cluster-externalAccess" label="External access" checked={f.externalAccess} onChange={(v) => set('externalAccess', v)}
          hint="Clients' SQL may read and write files, ATTACH and reach the network with the gateway's rights on its host." />
        {input('healthCheckQuery', 'Health check query', 'Default: SELECT 1.', { placeholder: 'SELECT 1' })}
      </fieldset>
    );
  }
  if (pooled(e)) {
    const scheme = e === 'postgres' ? 'postgres://user:password@host:5432/database' : 'mysql://user:password@host:3306/database';
    return (
      <fieldset>
        <legend>{e === 'postgres' ? 'PostgreSQL' : 'MySQL / MariaDB'} server</legend>
        {input('endpoint', 'Endpoint', `A URL such as ${scheme}. A stored password shows as ********, which keeps it; type it again when you change the rest of the URL.`, { wide: true, placeholder: scheme, autocomplete: 'off', spellcheck: false })}
        {input('poolSize', 'Pool size', 'Idle backend connections kept for reuse. Default: the cluster limit.', { inputmode: 'numeric' })}
        {input('maxPinnedSessions', 'Max pinned sessions', 'Client sessions that may each hold a connection for their session state. Default: 50; 0 refuses them.', { inputmode: 'numeric' })}
        {e === 'postgres' ? input('pipelineDepth', 'Pipeline depth', 'Plain SELECTs per server connection at a time. Default: 1 (no pipelining).', { inputmode: 'numeric' }) : null}
        {input('healthCheckQuery', 'Health check query', 'Default: SELECT 1.', { placeholder: 'SELECT 1' })}
      </fieldset>
    );
  }
  return (
    <>
      <fieldset>
        <legend>Trino coordinator</legend>
        {input('endpoint', 'Endpoint', 'The coordinator the gateway connects to: http://host:port or https://host:port. Checked with GET /v1/info.', { wide: true, placeholder: 'https://trino.example.com:8443', spellcheck: false })}
        <Field id="cluster-authType" label="Authentication">
          <Select id="cluster-authType" value={f.authType} onChange={(v) => set('authType', v)}
            options={[{ value: '', label: 'none' }, { value: 'basic', label: 'basic (user name and password)' }, { value: 'bearer', label: 'bearer token' }]} />
        </Field>
        {f.authType === 'basic' ? (
          <>
            {input('authUsername', 'Auth user name', null, { autocomplete: 'off' })}
            {input('authPassword', 'Auth password', 'A stored password shows as ********; leave it to keep it.', { type: 'password', autocomplete: 'new-password' })}
          </>
        ) : null}
        {f.authType === 'bearer'
          ? input('authToken', 'Auth token', 'A stored token shows as ********; leave it to keep it.', { type: 'password', autocomplete: 'new-password' })
          : null}
        <Field id="cluster-queryAuthType" label="Queries run as" hint="impersonate needs the cluster to let the auth user impersonate.">
          <Select id="cluster-queryAuthType" value={f.queryAuthType} onChange={(v) => set('queryAuthType', v)} aria-describedby="cluster-queryAuthType-hint"
            options={[{ value: '', label: 'default (service account)' }, { value: 'serviceAccount', label: 'serviceAccount: the auth user' }, { value: 'impersonate', label: "impersonate: the client's user" }]} />
        </Field>
      </fieldset>
      <fieldset>
        <legend>TLS (https endpoints)</legend>
        {input('tlsCaFile', 'CA file', 'A PEM file on the node to trust instead of the system CAs.', { wide: true, placeholder: '/etc/queryflux/trino-ca.pem' })}
        <Checkbox id="cluster-tlsInsecure" label="Skip certificate verification (local tests only)" checked={f.tlsInsecure} onChange={(v) => set('tlsInsecure', v)} />
      </fieldset>
    </>
  );
}

export function ClusterForm({ name }) {
  const adding = !name;
  const [original, setOriginal] = useState(adding ? {} : null);
  const [f, setF] = useState(adding ? blank() : null);
  const [initSql0, setInitSql0] = useState('');
  const [loadError, setLoadError] = useState(null);
  const [busy, error, run, setError] = useAction();
  const [checks, setChecks] = useState([]);

  useEffect(() => {
    if (adding) return;
    get(`/admin/config/clusters/${enc(name)}`).then((item) => {
      const form = fromItem(item);
      setOriginal(item);
      setInitSql0(form.initSql);
      setF(form);
    }, setLoadError);
  }, [name]);

  const set = (key, value) => setF((old) => ({ ...old, [key]: value }));

  const save = (e) => {
    e.preventDefault();
    const found = problems(f, adding, original);
    setChecks(found);
    setError(null);
    if (found.length) return;
    const body = toItem(f, original, initSql0);
    run(async () => {
      if (adding) {
        await send('POST', '/admin/config/clusters', { name: f.name.trim(), ...body });
        setNotice(`Cluster ${f.name.trim()} added. It is PENDING until its first health check; add it to a group on Groups and routing so that queries reach it.`);
      } else {
        await send('PUT', `/admin/config/clusters/${enc(name)}`, { name, ...body });
        setNotice(`Cluster ${name} saved. Its health check starts over.`);
      }
      navigate('/clusters');
    });
  };

  const title = adding ? 'Add cluster' : `Edit cluster ${name}`;
  if (loadError) return <><PageHeader title={title} /><ErrorNote error={loadError} /><p><a href="#/clusters">Back to clusters</a></p></>;
  if (!f) return <><PageHeader title={title} /><Loading what="the cluster" /></>;
  const extra = unmanagedKeys(original);

  return (
    <>
      <PageHeader title={title} />
      <form class="form card" onSubmit={save} noValidate aria-label={title}>
        <fieldset>
          <legend>Cluster</legend>
          <Field id="cluster-name" label="Name" hint={adding ? 'Letters, digits, "_", "-" and ".". It cannot change later.' : 'The name cannot change.'}>
            <TextInput id="cluster-name" value={f.name} onInput={(v) => set('name', v)} readOnly={!adding} required
              described autocomplete="off" spellcheck={false} />
          </Field>
          <Field id="cluster-engine" label="Engine" hint={adding ? 'The fields below follow the engine.' : "An edit keeps the engine; add a new cluster for another one."}>
            <Select id="cluster-engine" value={f.engine} onChange={(v) => set('engine', v)} disabled={!adding}
              aria-describedby="cluster-engine-hint" options={ENGINES} />
          </Field>
          <Checkbox id="cluster-enabled" label="Enabled (active)" checked={f.enabled} onChange={(v) => set('enabled', v)}
            hint="Off: the cluster is UNKNOWN and gets no queries, as with the Active switch." />
          <Field id="cluster-maxRunningQueries" label="Max running queries" hint="This cluster's own limit. Default: the smallest of its groups'.">
            <TextInput id="cluster-maxRunningQueries" value={f.maxRunningQueries} onInput={(v) => set('maxRunningQueries', v)} inputmode="numeric" described />
          </Field>
          <Field id="cluster-externalUrl" label="External URL" hint="Where people open the cluster (Trino's web UI); kept with each query record." wide>
            <TextInput id="cluster-externalUrl" value={f.externalUrl} onInput={(v) => set('externalUrl', v)} placeholder="https://trino.example.com" described spellcheck={false} />
          </Field>
        </fieldset>
        <EngineFields f={f} set={set} />
        {extra.length ? <p class="muted">{UNMANAGED_NOTE(extra)}</p> : null}
        {checks.length ? (
          <div class="note error" role="alert">
            <p>Please correct:</p>
            <ul>{checks.map((c) => <li>{c}</li>)}</ul>
          </div>
        ) : null}
        {error ? <ErrorNote error={error}>{error.status === 409 ? ' Choose another name.' : null}</ErrorNote> : null}
        <div class="form-actions">
          <button type="submit" class="primary" disabled={busy}>{busy ? 'Saving…' : adding ? 'Add cluster' : 'Save cluster'}</button>
          <a class="button" href="#/clusters">Cancel</a>
        </div>
      </form>
    </>
  );
}
