import { get } from '../api.js';
import { usePoll } from '../hooks.js';
import { href } from '../router.js';
import { localTime, shortTime, duration } from '../format.js';
import { QueryChart } from '../chart.jsx';
import {
  HealthBadge, StatusBadge, Badge, ErrorNote, Loading, Empty, PageHeader, Meter,
} from '../ui.jsx';

const REFRESH_MS = 5000;

/// Each part on its own: one failing read leaves the others on screen.
async function loadAll() {
  const parts = await Promise.allSettled([
    get('/admin/groups'),
    get('/admin/clusters'),
    get('/admin/queries/stats?minutes=60'),
    get('/admin/queries?limit=10'),
  ]);
  const [groups, clusters, stats, latest] = parts.map((p) => (p.status === 'fulfilled' ? { data: p.value } : { error: p.reason }));
  if (parts.every((p) => p.status === 'rejected')) throw parts[0].reason;
  return { groups, clusters, stats, latest };
}

function Section({ title, part, what, children }) {
  return (
    <section class="card" aria-labelledby={`h-${what}`}>
      <h2 id={`h-${what}`}>{title}</h2>
      {part?.error ? <ErrorNote error={part.error} /> : null}
      {part?.data === undefined && !part?.error ? <Loading what={what} /> : null}
      {part?.data !== undefined ? children(part.data) : null}
    </section>
  );
}

function GroupsTable({ groups }) {
  if (!groups.length) return <Empty>No cluster group is configured. Add one on <a href="#/groups">Groups and routing</a>.</Empty>;
  return (
    <table class="grid-table">
      <thead><tr><th>Group</th><th>Running / max</th><th>Queued / max</th></tr></thead>
      <tbody>
        {groups.map((g) => (
          <tr class={g.enabled === false ? 'row-muted' : ''}>
            <th scope="row">
              {g.name}{g.enabled === false ? <> <Badge>disabled</Badge></> : null}
              <div class="sub">{g.strategy} · {(g.members || []).join(', ') || 'no member'}</div>
            </th>
            <td><Meter value={g.runningQueries} max={g.maxRunningQueries} label="running" /></td>
            <td class="nowrap">{g.queuedQueries} / {g.maxQueuedQueries}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function ClustersTable({ clusters }) {
  if (!clusters.length) return <Empty>No cluster is configured. <a href="#/clusters/new">Add a cluster</a>.</Empty>;
  return (
    <table class="grid-table">
      <thead><tr><th>Cluster</th><th>Health</th><th>Active</th><th>Running / max</th><th>Queued</th></tr></thead>
      <tbody>
        {clusters.map((c) => (
          <tr class={c.active ? '' : 'row-muted'}>
            <th scope="row">{c.name}<div class="sub">{c.engine}{c.groups?.length ? ` · ${c.groups.join(', ')}` : ''}</div></th>
            <td><HealthBadge status={c.status} /></td>
            <td>{c.active ? 'yes' : <Badge tone="warn">inactive</Badge>}</td>
            <td><Meter value={c.runningQueries} max={c.maxRunningQueries} label="running" /></td>
            <td>{c.queuedQueries}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function LatestQueries({ page }) {
  const queries = page.queries || [];
  if (!queries.length) return <Empty>No query has finished yet. Queries show here as soon as they end.</Empty>;
  return (
    <table class="grid-table">
      <thead><tr><th>Finished</th><th>Status</th><th>User</th><th>Group / cluster</th><th>Took</th><th>SQL</th></tr></thead>
      <tbody>
        {queries.map((q) => (
          <tr>
            <td class="nowrap" title={localTime(q.finishedAtMs || q.createdAtMs)}>{shortTime(q.finishedAtMs || q.createdAtMs)}</td>
            <td><StatusBadge status={q.status} /></td>
            <td>{q.user}</td>
            <td>{q.clusterGroup || '—'}{q.clusterName ? ` / ${q.clusterName}` : ''}</td>
            <td class="num">{duration(q.executionDurationMs)}</td>
            <td class="sql-cell"><a href={href(['history', q.proxyQueryId])} title={`Details of ${q.proxyQueryId}`}>{q.sql}</a></td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function Dashboard() {
  const { data, error, at } = usePoll(loadAll, REFRESH_MS);
  return (
    <>
      <PageHeader title="Dashboard" updated={at}>
        <span class="muted">refreshes every 5 s</span>
      </PageHeader>
      {error ? <ErrorNote error={error} /> : null}
      {!data && !error ? <Loading /> : null}
      {data ? (
        <div class="dash">
          <Section title="Queries in the last hour" part={data.stats} what="chart">
            {(s) => <QueryChart buckets={s.buckets || []} bucketSeconds={s.bucketSeconds || 60} />}
          </Section>
          <div class="dash-row">
            <Section title="Groups" part={data.groups} what="groups">{(g) => <GroupsTable groups={g} />}</Section>
            <Section title="Clusters" part={data.clusters} what="clusters">{(c) => <ClustersTable clusters={c} />}</Section>
          </div>
          <Section title="Latest queries" part={data.latest} what="latest">
            {(p) => (
              <>
                <LatestQueries page={p} />
                {p.total > 0 ? <p class="more"><a href="#/history">All {p.total} queries in the history</a></p> : null}
              </>
            )}
          </Section>
        </div>
      ) : null}
    </>
  );
}
