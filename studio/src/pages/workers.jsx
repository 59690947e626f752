// The worker registry of a control plane. Stale and erroring workers are
// marked with a badge and words as well as the row's colour.
import { get } from '../api.js';
import { usePoll } from '../hooks.js';
import { ago, localTime, isoTime, shortRevision } from '../format.js';
import { Badge, ErrorNote, Loading, Empty, PageHeader } from '../ui.jsx';

/// On a node without workerApi the registry does not exist (404): that is
/// an answer, not an error.
async function load() {
  try {
    return { workers: await get('/admin/workers') };
  } catch (e) {
    if (e.status === 404) return { none: e.message };
    throw e;
  }
}

/// Stale: gone, or silent for three heartbeat intervals (the registry's
/// own rule; 300 s when the interval is unknown).
export function staleness(w, now = Date.now()) {
  if (w.status === 'gone') return 'gone: no heartbeat for three intervals';
  const seen = Date.parse(w.lastSeenAt);
  const allowed = (w.heartbeatIntervalSecs ? w.heartbeatIntervalSecs * 3 : 300) * 1000;
  if (!Number.isNaN(seen) && now - seen > allowed) return `stale: no heartbeat since ${ago(seen, now)}`;
  return '';
}

const statusTone = { active: 'ok', draining: 'warn', gone: 'bad' };

function Labels({ labels }) {
  const entries = Object.entries(labels || {});
  if (!entries.length) return <span class="muted">none</span>;
  return entries.map(([k, v]) => <span class="chip">{k}={v}</span>);
}

function Revision({ w }) {
  if (w.upToDate) return <><Badge tone="ok">up to date</Badge> <code title={w.activeRevision}>{shortRevision(w.activeRevision)}</code></>;
  return (
    <>
      <Badge tone="warn">behind</Badge>{' '}
      <span title={`active ${w.activeRevision || 'none'}; current ${w.currentRevision || 'unknown'}`}>
        runs <code>{w.activeRevision ? shortRevision(w.activeRevision) : 'none'}</code>, current <code>{shortRevision(w.currentRevision) || 'unknown'}</code>
      </span>
      {w.downloadedRevision && w.downloadedRevision !== w.activeRevision
        ? <div class="muted small">downloaded <code>{shortRevision(w.downloadedRevision)}</code>, not active</div> : null}
    </>
  );
}

function WorkerRow({ w, now }) {
  const stale = staleness(w, now);
  const erroring = !!w.lastError;
  const cls = [stale ? 'row-stale' : '', erroring ? 'row-error' : ''].join(' ').trim();
  return (
    <tr class={cls} data-worker={w.name}>
      <th scope="row">
        {w.name}
        {stale ? <div><Badge tone="bad">{stale.split(':')[0]}</Badge></div> : null}
        {erroring ? <div><Badge tone="bad">error</Badge></div> : null}
      </th>
      <td><Badge tone={statusTone[w.status] || 'muted'}>{w.status}</Badge>{stale ? <div class="small">{stale}</div> : null}</td>
      <td><Labels labels={w.labels} /></td>
      <td>{w.version}</td>
      <td><Revision w={w} /></td>
      <td class="nowrap" title={w.lastSeenAt}>{ago(w.lastSeenAt, now)}<div class="muted small">{localTime(w.lastSeenAt)}</div></td>
      <td>
        {w.coordinationMode}
        {w.coordinationWarning ? <div class="note warn small" role="note"><strong>Warning:</strong> {w.coordinationWarning}</div> : null}
      </td>
      <td>{w.configSource || <span class="muted">—</span>}</td>
      <td class="cell-wrap">{erroring ? <span class="cell-error">{w.lastError}</span> : <span class="muted">none</span>}</td>
    </tr>
  );
}

export function Workers() {
  const { data, error, loading, at } = usePoll(load, 5000);
  const now = at || Date.now();
  const workers = data?.workers || [];
  const stale = workers.filter((w) => staleness(w, now)).length;
  const erroring = workers.filter((w) => w.lastError).length;
  return (
    <>
      <PageHeader title="Workers" updated={at} />
      {error ? <ErrorNote error={error} /> : null}
      {loading ? <Loading what="the worker registry" /> : null}
      {data?.none !== undefined ? (
        <Empty>
          <p><strong>This node serves no workers.</strong> The worker registry exists on a control plane
            (<code>role: controlPlane</code>) or on a standalone node with <code>workerApi.enabled: true</code>;
            workers register there and heartbeat. See docs/worker-mode.md.</p>
          <p class="muted small">The node said: {data.none}</p>
        </Empty>
      ) : null}
      {data?.workers && !workers.length ? (
        <Empty>No worker has registered yet. A worker registers when it starts with <code>controlPlane.url</code> pointing at this node.</Empty>
      ) : null}
      {workers.length ? (
        <>
          <p class="lead" role="status">
            {workers.length} {workers.length === 1 ? 'worker' : 'workers'}
            {stale ? `, ${stale} stale` : ''}{erroring ? `, ${erroring} with an error` : ''}
            {!stale && !erroring ? ', all heard from and without errors' : ''}.
          </p>
          <div class="table-wrap">
            <table class="grid-table workers">
              <thead>
                <tr>
                  <th>Name</th><th>Status</th><th>Labels</th><th>Version</th><th>Config revision</th>
                  <th>Last seen</th><th>Coordination</th><th>Config from</th><th>Last error</th>
                </tr>
              </thead>
              <tbody>{workers.map((w) => <WorkerRow key={w.name} w={w} now={now} />)}</tbody>
            </table>
          </div>
        </>
      ) : null}
    </>
  );
}
