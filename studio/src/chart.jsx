// Queries and errors per minute as stacked SVG bars: failures at the base
// in their own colour, so that they read against the same zero line. Each minute has a <title>, which
// browsers show as a tooltip and screen readers read.
import { hhmm } from './format.js';

const W = 760;
const H = 200;
const M = { top: 10, right: 8, bottom: 24, left: 40 };

/// 0, a round step, 2 steps... covering max: [top, step].
function scale(max) {
  if (max <= 4) return [4, 1];
  const raw = max / 4;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((f) => f * mag).find((s) => s >= raw);
  return [Math.ceil(max / step) * step, step];
}

export function QueryChart({ buckets, bucketSeconds = 60 }) {
  const n = buckets.length;
  const total = buckets.reduce((a, b) => a + b.queries, 0);
  const errors = buckets.reduce((a, b) => a + b.errors, 0);
  const [top, step] = scale(Math.max(0, ...buckets.map((b) => b.queries)));
  const pw = W - M.left - M.right;
  const ph = H - M.top - M.bottom;
  const slot = n ? pw / n : pw;
  const barW = Math.max(1, slot * 0.72);
  const y = (v) => M.top + ph - (v / top) * ph;
  const ticks = [];
  for (let v = 0; v <= top; v += step) ticks.push(v);
  const minutes = bucketSeconds / 60;
  const label = `Queries finished per ${minutes === 1 ? 'minute' : `${minutes} minutes`} over the last ${Math.round((n * bucketSeconds) / 60)} minutes: ${total} queries, ${errors} failed.`;
  return (
    <figure class="chart">
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label={label} class="chart-svg">
        {ticks.map((v) => (
          <g class="grid">
            <line x1={M.left} x2={W - M.right} y1={y(v)} y2={y(v)} />
            <text x={M.left - 6} y={y(v) + 4} text-anchor="end">{v}</text>
          </g>
        ))}
        {buckets.map((b, i) => {
          const x = M.left + i * slot + (slot - barW) / 2;
          const ok = b.queries - b.errors;
          const start = new Date(b.start);
          const tip = `${hhmm(start)}: ${b.queries} ${b.queries === 1 ? 'query' : 'queries'}, ${b.errors} failed`;
          const labelled = start.getMinutes() % 10 === 0 && bucketSeconds === 60;
          return (
            <g class="bucket">
              <title>{tip}</title>
              <rect class="hover" x={M.left + i * slot} y={M.top} width={slot} height={ph} />
              {ok > 0 ? <rect class="bar-ok" x={x} y={y(b.queries)} width={barW} height={y(b.errors) - y(b.queries)} /> : null}
              {b.errors > 0 ? <rect class="bar-err" x={x} y={y(b.errors)} width={barW} height={y(0) - y(b.errors)} /> : null}
              {labelled || (bucketSeconds !== 60 && i % Math.ceil(n / 6) === 0)
                ? <text class="xlabel" x={M.left + i * slot + slot / 2} y={H - 6} text-anchor={i > n - 4 ? 'end' : i < 3 ? 'start' : 'middle'}>{hhmm(start)}</text>
                : null}
            </g>
          );
        })}
        <line class="axis" x1={M.left} x2={W - M.right} y1={y(0)} y2={y(0)} />
        {total === 0
          ? <text class="chart-empty" x={M.left + pw / 2} y={M.top + ph / 2} text-anchor="middle">No query finished in this hour</text>
          : null}
      </svg>
      <figcaption class="legend">
        <span><i class="swatch ok" aria-hidden="true" /> other queries</span>
        <span><i class="swatch err" aria-hidden="true" /> failed</span>
        <span class="legend-total">{total} queries, {errors} failed in the last hour</span>
      </figcaption>
    </figure>
  );
}
