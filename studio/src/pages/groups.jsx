import { useState } from 'preact/hooks';
import { get, send, enc } from '../api.js';
import { usePoll, useAction } from '../hooks.js';
import { href } from '../router.js';
import {
  Badge, ErrorNote, Loading, Empty, PageHeader, Meter, ConfirmDialog, Notice, takeNotice,
} from '../ui.jsx';
import { RoutingEditor } from './routing.jsx';

/// The stored config of each group with what admission sees now.
async function loadGroups() {
  const [stored, live] = await Promise.all([
    get('/admin/config/groups'),
    get('/admin/groups').catch((e) => ({ error: e })),
  ]);
  const byName = new Map(Array.isArray(live) ? live.map((g) => [g.name, g]) : []);
  return {
    liveError: Array.isArray(live) ? null : live.error,
    groups: stored.map((g) => ({ ...g, live: byName.get(g.name) })),
  };
}

/// A 409 on delete names the routers or the fallback that use the group.
export function explainGroupInUse(error, name) {
  if (error?.status !== 409) return null;
  const routers = [...new Set([...error.message.matchAll(/routers\[(\d+)\]/g)].map((m) => Number(m[1]) + 1))];
  const uses = [];
  if (routers.length) uses.push(`router${routers.length > 1 ? 's' : ''} ${routers.join(', ')} of the chain`);
  if (/routingFallback/.test(error.message)) uses.push('the routing fallback');
  if (!uses.length) return `${name} is still in use. ${error.message}`;
  return `${name} is still used by ${uses.join(' and ')}: change the routing below first, then delete it.`;
}

function DeleteGroup({ group, onDone, onCancel }) {
  const [busy, error, run] = useAction();
  const inUse = explainGroupInUse(error, group.name);
  return (
    <ConfirmDialog title={`Delete group ${group.name}?`} confirmLabel={`Delete ${group.name}`} busy={busy}
      error={inUse ? null : error} onCancel={onCancel}
      onConfirm={() => run(async () => {
        await send('DELETE', `/admin/config/groups/${enc(group.name)}`);
        onDone(`Group ${group.name} deleted.`);
      })}>
      <p>Queries can no longer be routed to it. Its member clusters stay.</p>
      {inUse ? <div class="note error" role="alert">{inUse}<div class="server-says">The node said: {error.message}</div></div> : null}
    </ConfirmDialog>
  );
}

const dflt = (v, d) => (v === undefined || v === null ? <span class="muted" title="the default">{d}</span> : v);

function GroupRow({ g, onDelete }) {
  const live = g.live;
  const disabled = g.enabled === false;
  return (
    <tr class={disabled ? 'row-muted' : ''}>
      <th scope="row">
        <a href={href(['groups', g.name, 'edit'])}>{g.name}</a>
        {disabled ? <> <Badge tone="warn">disabled</Badge></> : null}
      </th>
      <td>{(g.members || []).map((m, i) => <span class="chip" title={`member ${i + 1}`}>{m}</span>)}</td>
      <td>{g.strategy?.type || <span class="muted" title="the default">roundRobin</span>}</td>
      <td>{live ? <Meter value={live.runningQueries} max={live.maxRunningQueries} label="running" /> : '—'}</td>
      <td class="num">{live ? live.queuedQueries : '—'}</td>
      <td class="limits">
        <div>{dflt(g.maxRunningQueries, 10)} per cluster</div>
        <div>{dflt(g.maxQueuedQueries, 100)} queued, {dflt(g.capacityWaitTimeoutSecs, 300)} s wait</div>
      </td>
      <td class="actions">
        <a class="button small" href={href(['groups', g.name, 'edit'])} aria-label={`Edit group ${g.name}`}>Edit</a>
        <button type="button" class="small danger-outline" onClick={() => onDelete(g)} aria-label={`Delete group ${g.name}`}>Delete</button>
      </td>
    </tr>
  );
}

export function Groups() {
  const { data, error, loading, reload, at } = usePoll(loadGroups, 5000);
  const [deleting, setDeleting] = useState(null);
  const [notice, setNoticeText] = useState(takeNotice);
  const names = data ? data.groups.map((g) => g.name) : [];

  return (
    <>
      <PageHeader title="Groups and routing" updated={at}>
        <a class="button primary" href="#/groups/new">Add group</a>
      </PageHeader>
      <Notice text={notice} onClose={() => setNoticeText('')} />
      <section class="card" aria-labelledby="h-groups">
        <h2 id="h-groups">Cluster groups</h2>
        <p class="lead">A group admits queries up to its limits and picks a healthy, active member under its limit by its strategy. Its limit per cluster applies to each member that sets none of its own; running / max adds up the members on this node.</p>
        {error ? <ErrorNote error={error} /> : null}
        {data?.liveError ? <ErrorNote error={data.liveError}> Running and queued counts are not shown.</ErrorNote> : null}
        {loading ? <Loading what="groups" /> : null}
        {data && !data.groups.length ? <Empty>No group yet. <a href="#/groups/new">Add one</a>: queries are routed to groups, not to clusters.</Empty> : null}
        {data && data.groups.length ? (
          <div class="table-wrap">
            <table class="grid-table">
              <thead>
                <tr>
                  <th>Name</th><th>Members (in order)</th><th>Strategy</th><th>Running / max</th>
                  <th class="num">Queued</th><th title="Max running queries per cluster, max queued queries, capacity wait timeout">Limits</th>
                  <th><span class="sr-only">Actions</span></th>
                </tr>
              </thead>
              <tbody>{data.groups.map((g) => <GroupRow key={g.name} g={g} onDelete={setDeleting} />)}</tbody>
            </table>
          </div>
        ) : null}
      </section>
      {data ? <RoutingEditor groups={names} /> : null}
      {deleting ? (
        <DeleteGroup group={deleting} onCancel={() => setDeleting(null)}
          onDone={(text) => { setDeleting(null); setNoticeText(text); reload(); }} />
      ) : null}
    </>
  );
}
