import { useEffect, useState } from 'preact/hooks';
import { get, send, enc } from '../api.js';
import { usePoll, useAction } from '../hooks.js';
import { href } from '../router.js';
import {
  HealthBadge, Badge, ErrorNote, Loading, Empty, PageHeader, Meter, Switch, ConfirmDialog,
  Notice, takeNotice,
} from '../ui.jsx';

const draining = (c) => !c.active && c.runningQueries + c.queuedQueries > 0;

/// A 409 on delete names what still uses the cluster; say what to do.
export function explainInUse(error, name, groups) {
  if (error?.status !== 409) return null;
  const named = [...(error.message.matchAll(/clusterGroups\.([^.\s:[]+)/g))].map((m) => m[1]);
  const list = [...new Set(named.length ? named : groups)];
  if (!list.length) return `${name} is still in use. ${error.message}`;
  const which = list.length === 1 ? `group ${list[0]}` : `groups ${list.join(', ')}`;
  return `${name} is still a member of ${which}: remove it from ${which} first (on Groups and routing), then delete it.`;
}

function DeleteDialog({ cluster, onDone, onCancel }) {
  const [busy, error, run] = useAction();
  const confirm = () => run(async () => {
    await send('DELETE', `/admin/config/clusters/${enc(cluster.name)}`);
    onDone(`Cluster ${cluster.name} deleted.`);
  });
  const inUse = explainInUse(error, cluster.name, cluster.groups || []);
  return (
    <ConfirmDialog title={`Delete cluster ${cluster.name}?`} confirmLabel={`Delete ${cluster.name}`}
      busy={busy} error={inUse ? null : error} onConfirm={confirm} onCancel={onCancel}>
      <p>Its configuration is removed from the node and it takes no more queries.</p>
      {cluster.groups?.length
        ? <p>It is a member of {cluster.groups.join(', ')}. A cluster still in a group cannot be deleted.</p>
        : null}
      {inUse ? <div class="note error" role="alert">{inUse}<div class="server-says">The node said: {error.message}</div></div> : null}
    </ConfirmDialog>
  );
}

function ActiveCell({ cluster, onChanged }) {
  const [busy, error, run] = useAction();
  // What the user asked for shows at once; the list catches up on reload.
  const [wanted, setWanted] = useState(null);
  useEffect(() => setWanted(null), [cluster.active]);
  const toggle = async (on) => {
    setWanted(on);
    const ok = await run(() => send('POST', `/admin/clusters/${enc(cluster.name)}/${on ? 'activate' : 'deactivate'}`));
    if (ok) onChanged(); else setWanted(null);
  };
  return (
    <td>
      <Switch id={`active-${cluster.name}`} label={`${cluster.name} active`} checked={wanted ?? cluster.active}
        disabled={busy} onChange={toggle} />
      {error ? <div class="cell-error" role="alert">{error.message}</div> : null}
    </td>
  );
}

function Row({ c, onChanged, onDelete }) {
  const drain = draining(c);
  return (
    <tr class={drain ? 'row-warn' : c.active ? '' : 'row-muted'} data-cluster={c.name}>
      <th scope="row"><a href={href(['clusters', c.name, 'edit'])}>{c.name}</a></th>
      <td>{c.engine}</td>
      <td>{c.groups?.length ? c.groups.join(', ') : <span class="muted">none</span>}</td>
      <td>
        <HealthBadge status={c.status} />
        {drain
          ? <div class="draining" role="status">draining: {c.runningQueries} running, {c.queuedQueries} queued</div>
          : !c.active ? <div class="muted small">out of routing</div> : null}
      </td>
      <ActiveCell cluster={c} onChanged={onChanged} />
      <td><Meter value={c.runningQueries} max={c.maxRunningQueries} label={`${c.name} running`} /></td>
      <td class="num">{c.queuedQueries}</td>
      <td class="num" title="The cluster's own count of running queries at its last health check">{c.reportedLoad}</td>
      <td class="actions">
        <a class="button small" href={href(['clusters', c.name, 'edit'])} aria-label={`Edit ${c.name}`}>Edit</a>
        <button type="button" class="small danger-outline" onClick={() => onDelete(c)} aria-label={`Delete ${c.name}`}>Delete</button>
      </td>
    </tr>
  );
}

export function Clusters() {
  // Faster while a cluster drains, so its counts are seen falling to zero.
  const { data, error, loading, reload, at } = usePoll(() => get('/admin/clusters'),
    (list) => (list && list.some(draining) ? 2000 : 5000));
  const [deleting, setDeleting] = useState(null);
  const [notice, setNoticeText] = useState(takeNotice);

  return (
    <>
      <PageHeader title="Clusters" updated={at}>
        <a class="button primary" href="#/clusters/new">Add cluster</a>
      </PageHeader>
      <Notice text={notice} onClose={() => setNoticeText('')} />
      <p class="lead">
        Turn a cluster's <strong>Active</strong> switch off to drain it: it leaves routing at once (UNKNOWN)
        while the queries on it finish; stop it once its running and queued counts are zero.
      </p>
      {error ? <ErrorNote error={error} /> : null}
      {loading ? <Loading what="clusters" /> : null}
      {data && !data.length ? <Empty>No cluster yet. <a href="#/clusters/new">Add the first one</a>.</Empty> : null}
      {data && data.length ? (
        <div class="table-wrap">
          <table class="grid-table clusters">
            <thead>
              <tr>
                <th>Name</th><th>Engine</th><th>Groups</th><th>Health</th><th>Active</th>
                <th>Running / max</th><th class="num">Queued</th><th class="num">Reported load</th><th><span class="sr-only">Actions</span></th>
              </tr>
            </thead>
            <tbody>
              {data.map((c) => <Row key={c.name} c={c} onChanged={reload} onDelete={setDeleting} />)}
            </tbody>
          </table>
        </div>
      ) : null}
      {deleting ? (
        <DeleteDialog cluster={deleting} onCancel={() => setDeleting(null)}
          onDone={(text) => { setDeleting(null); setNoticeText(text); reload(); }} />
      ) : null}
    </>
  );
}
