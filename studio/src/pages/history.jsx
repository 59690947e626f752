// Query history. The filters and the page live in the hash query, so a
// link reproduces the view and Back returns to the previous one.
import { useEffect, useState } from 'preact/hooks';
import { get, qs } from '../api.js';
import { useLoad } from '../hooks.js';
import { navigate, href, rememberHistory } from '../router.js';
import { localTime, shortTime, duration, num, toLocalInput, fromLocalInput } from '../format.js';
import {
  StatusBadge, ErrorNote, Loading, Empty, PageHeader, Field, TextInput, Select,
} from '../ui.jsx';

const FILTERS = ['search', 'user', 'group', 'cluster', 'status', 'worker', 'from', 'to'];
const STATUSES = [{ value: '', label: 'any' }, 'Success', 'Failed', 'Cancelled', 'Denied'];
const SIZES = ['25', '50', '100', '200'];

// A "to" of 12:05 takes in the queries created during that minute.
const endOfMinute = (ms) => (ms ? String(Number(ms) + 59999) : '');

function formOf(query) {
  return Object.fromEntries(FILTERS.map((k) => [k, query[k] || '']));
}

function Filters({ query, names }) {
  const [f, setF] = useState(() => formOf(query));
  // Back and forward change the hash: the form follows.
  useEffect(() => setF(formOf(query)), [JSON.stringify(query)]);
  const set = (k) => (v) => setF((old) => ({ ...old, [k]: v }));
  const apply = (next) => navigate('/history', { ...next, limit: query.limit });
  const text = (k, label, extra = {}) => (
    <Field id={`h-${k}`} label={label}>
      <TextInput id={`h-${k}`} value={f[k]} onInput={set(k)} autocomplete="off" {...extra} />
    </Field>
  );
  const last = (ms) => apply({ ...f, from: String(Date.now() - ms), to: '' });
  return (
    <form class="filters card" role="search" aria-label="Filter queries" onSubmit={(e) => { e.preventDefault(); apply(f); }}>
      {text('search', 'SQL contains', { placeholder: 'text in the SQL', spellcheck: false })}
      {text('user', 'User')}
      {text('group', 'Group', { list: 'h-groups' })}
      {text('cluster', 'Cluster', { list: 'h-clusters' })}
      <Field id="h-status" label="Status">
        <Select id="h-status" value={f.status} onChange={set('status')} options={STATUSES} />
      </Field>
      {text('worker', 'Worker')}
      <Field id="h-from" label="From (local time)">
        <input id="h-from" type="datetime-local" value={toLocalInput(f.from)} onInput={(e) => set('from')(fromLocalInput(e.currentTarget.value))} />
      </Field>
      <Field id="h-to" label="To (local time)">
        <input id="h-to" type="datetime-local" value={toLocalInput(f.to)} onInput={(e) => set('to')(endOfMinute(fromLocalInput(e.currentTarget.value)))} />
      </Field>
      <datalist id="h-groups">{names.groups.map((g) => <option value={g} />)}</datalist>
      <datalist id="h-clusters">{names.clusters.map((c) => <option value={c} />)}</datalist>
      <div class="filter-actions">
        <button type="submit" class="primary">Apply filters</button>
        <button type="button" onClick={() => last(3600e3)}>Last hour</button>
        <button type="button" onClick={() => last(86400e3)}>Last 24 hours</button>
        <button type="button" onClick={() => navigate('/history', { limit: query.limit })}>Clear</button>
      </div>
    </form>
  );
}

function Pager({ total, limit, offset, query }) {
  const first = total ? offset + 1 : 0;
  const lastShown = Math.min(total, offset + limit);
  const go = (o) => navigate('/history', { ...query, offset: o > 0 ? o : '' });
  return (
    <div class="pager">
      <span role="status">{total ? `Queries ${num(first)}–${num(lastShown)} of ${num(total)}` : 'No query'}</span>
      <button type="button" disabled={offset === 0} onClick={() => go(Math.max(0, offset - limit))}>Previous page</button>
      <button type="button" disabled={offset + limit >= total} onClick={() => go(offset + limit)}>Next page</button>
      <div class="field inline">
        <label for="h-limit">Rows per page</label>
        <Select id="h-limit" value={String(limit)} options={SIZES}
          onChange={(v) => navigate('/history', { ...query, limit: v, offset: '' })} />
      </div>
    </div>
  );
}

function Table({ queries }) {
  const workers = queries.some((q) => q.worker);
  return (
    <div class="table-wrap">
      <table class="grid-table history">
        <thead>
          <tr>
            <th>Created</th><th>Status</th><th>User</th><th>Protocol</th><th>Group</th><th>Cluster</th>
            {workers ? <th>Worker</th> : null}
            <th class="num">Rows</th><th class="num">Queued</th><th class="num">Ran</th><th>SQL</th>
          </tr>
        </thead>
        <tbody>
          {queries.map((q) => (
            <tr class={q.status === 'Failed' || q.status === 'Denied' ? 'row-error' : ''}>
              <td class="nowrap" title={localTime(q.createdAtMs)}>{shortTime(q.createdAtMs)}</td>
              <td><StatusBadge status={q.status} /></td>
              <td>{q.user}</td>
              <td>{q.protocol}</td>
              <td>{q.clusterGroup || '—'}</td>
              <td>{q.clusterName || '—'}</td>
              {workers ? <td>{q.worker || '—'}</td> : null}
              <td class="num">{num(q.rowsReturned)}</td>
              <td class="num">{duration(q.queueDurationMs)}</td>
              <td class="num">{duration(q.executionDurationMs)}</td>
              <td class="sql-cell">
                <a href={href(['history', q.proxyQueryId])} title={`Details of query ${q.proxyQueryId}`}>{q.sql || '(no SQL kept)'}</a>
                {q.errorMessage ? <div class="cell-error" title={q.errorMessage}>{q.errorMessage}</div> : null}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export function History({ query }) {
  const limit = SIZES.includes(query.limit) ? Number(query.limit) : 50;
  const offset = Math.max(0, Number(query.offset) || 0);
  const key = JSON.stringify(query);
  useEffect(() => rememberHistory(location.hash || '#/history'), [key]);
  const page = useLoad(() => get(`/admin/queries${qs({ ...formOf(query), limit, offset })}`), [key]);
  const names = useLoad(async () => {
    const cs = await get('/admin/clusters');
    return { clusters: cs.map((c) => c.name), groups: [...new Set(cs.flatMap((c) => c.groups || []))] };
  });
  const filtered = FILTERS.some((k) => query[k]);
  return (
    <>
      <PageHeader title="Query history" updated={page.at}>
        <button type="button" onClick={page.reload}>Refresh</button>
      </PageHeader>
      <Filters query={query} names={names.data || { groups: [], clusters: [] }} />
      {page.error ? <ErrorNote error={page.error} /> : null}
      {page.loading ? <Loading what="queries" /> : null}
      {page.data ? (
        <>
          <Pager total={page.data.total} limit={limit} offset={offset} query={query} />
          {page.data.queries.length
            ? <Table queries={page.data.queries} />
            : <Empty>{filtered ? 'No query matches these filters.' : 'No query has finished yet.'}</Empty>}
        </>
      ) : null}
    </>
  );
}
