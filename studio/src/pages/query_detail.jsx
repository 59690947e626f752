import { get, enc } from '../api.js';
import { useLoad } from '../hooks.js';
import { historyHref } from '../router.js';
import { localTime, duration, num, isoTime } from '../format.js';
import { StatusBadge, ErrorNote, Loading, PageHeader } from '../ui.jsx';
import { TraceView } from './router_text.jsx';

const engines = { duckDb: 'DuckDB', sqlite: 'SQLite', postgres: 'PostgreSQL', mysql: 'MySQL', trino: 'Trino' };

function Row({ label, children }) {
  return <><dt>{label}</dt><dd>{children === '' || children === null || children === undefined ? <span class="muted">—</span> : children}</dd></>;
}

function When({ ms, none = 'never' }) {
  if (!ms) return <span class="muted">{none}</span>;
  return <time datetime={isoTime(ms)} title={isoTime(ms)}>{localTime(ms)}</time>;
}

export function QueryDetail({ id }) {
  const { data: q, error, loading } = useLoad(() => get(`/admin/queries/${enc(id)}`), [id]);
  const back = <a class="button" href={historyHref()}>Back to history</a>;
  if (error) {
    return (
      <>
        <PageHeader title="Query">{back}</PageHeader>
        <ErrorNote error={error.status === 404 ? new Error(`No query ${id} in the history. It may be older than what the node keeps.`) : error} />
      </>
    );
  }
  if (loading || !q) return <><PageHeader title="Query">{back}</PageHeader><Loading what="the query" /></>;
  return (
    <>
      <PageHeader title={`Query ${q.proxyQueryId}`}>{back}</PageHeader>
      <div class="detail-grid">
        <section class="card" aria-labelledby="h-sql">
          <h2 id="h-sql">SQL</h2>
          <pre class="sql" tabindex="0" aria-label="SQL text">{q.sql || '(the SQL was not kept)'}</pre>
          {q.errorMessage ? (
            <div class="note error" role="note"><strong>Error</strong><pre class="error-text">{q.errorMessage}</pre></div>
          ) : null}
        </section>
        <section class="card" aria-labelledby="h-facts">
          <h2 id="h-facts">Summary</h2>
          <dl class="facts">
            <Row label="Status"><StatusBadge status={q.status} /></Row>
            <Row label="User">{q.user}</Row>
            <Row label="Source">{q.source}</Row>
            <Row label="Protocol">{q.protocol}</Row>
            <Row label="Group">{q.clusterGroup}</Row>
            <Row label="Cluster">{q.clusterName}{q.engineType ? <span class="muted"> ({engines[q.engineType] || q.engineType})</span> : null}</Row>
            <Row label="Worker">{q.worker || <span class="muted">this node</span>}</Row>
            <Row label="Catalog / schema">{[q.catalog, q.schema].filter(Boolean).join(' / ')}</Row>
            <Row label="Rows returned">{num(q.rowsReturned)}</Row>
            <Row label="Cluster's query id">{q.backendQueryId}</Row>
            {q.backendQueryUrl ? (
              <Row label="On the cluster">
                <a href={q.backendQueryUrl} target="_blank" rel="noopener noreferrer">open on the cluster</a>
                <span class="muted small"> (opens in a new tab)</span>
              </Row>
            ) : null}
          </dl>
        </section>
        <section class="card" aria-labelledby="h-timings">
          <h2 id="h-timings">Timings</h2>
          <dl class="facts">
            <Row label="Queued for">{duration(q.queueDurationMs)}</Row>
            <Row label="Ran for">{duration(q.executionDurationMs)}</Row>
            <Row label="Created"><When ms={q.createdAtMs} /></Row>
            <Row label="Started"><When ms={q.startedAtMs} none="never started" /></Row>
            <Row label="Finished"><When ms={q.finishedAtMs} /></Row>
          </dl>
          <p class="muted small">Times are in this browser's time zone.</p>
        </section>
        <section class="card" aria-labelledby="h-trace">
          <h2 id="h-trace">Routing trace</h2>
          <TraceView trace={q.routingTrace} />
        </section>
      </div>
    </>
  );
}
