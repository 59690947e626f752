// A router in words: what it matches and where that goes. Templates give
// a new router of each type a valid shape to edit from.

export const ROUTER_TYPES = [
  { value: 'header', label: 'header: a request header\'s value' },
  { value: 'userGroup', label: 'userGroup: the user' },
  { value: 'protocolBased', label: 'protocolBased: the client protocol' },
  { value: 'queryRegex', label: 'queryRegex: the SQL text' },
  { value: 'tags', label: 'tags: client tags' },
];

export function template(type, group = 'GROUP') {
  switch (type) {
    case 'header': return { type, headerName: 'X-QueryFlux-Group', headerValueToGroup: { [group]: group } };
    case 'userGroup': return { type, userToGroup: { alice: group } };
    case 'protocolBased': return { type, trinoHttp: group };
    case 'queryRegex': return { type, rules: [{ regex: '(?i)^\\s*select', targetGroup: group }] };
    case 'tags': return { type, rules: [{ tags: { team: 'bi' }, targetGroup: group }] };
    default: return { type };
  }
}

const Arrow = ({ to }) => <> → <strong>{to}</strong></>;

function mapLines(map, left) {
  const entries = Object.entries(map || {});
  if (!entries.length) return [<li class="muted">matches nothing yet</li>];
  return entries.map(([k, g]) => <li>{left(k)}<Arrow to={g} /></li>);
}

function rule(r) {
  const target = r.action === 'deny'
    ? <> → <strong class="deny">deny</strong>{r.error ? <>: “{r.error}”</> : null}</>
    : <Arrow to={r.targetGroup} />;
  return target;
}

/// [title, <li>...] for a parsed router.
export function describe(r) {
  switch (r.type) {
    case 'header':
      return [`the ${r.headerName || '(unnamed)'} header`,
        mapLines(r.headerValueToGroup, (v) => <>value <code>{v}</code></>)];
    case 'userGroup':
      return ['the user', mapLines(r.userToGroup, (u) => <>user <code>{u}</code></>)];
    case 'protocolBased': {
      const map = {};
      for (const p of ['trinoHttp', 'postgresWire', 'mysqlWire', 'flightSql']) if (r[p]) map[p] = r[p];
      return ['the client protocol', mapLines(map, (p) => <>over <code>{p}</code></>)];
    }
    case 'queryRegex':
      return ['the SQL text', (r.rules || []).map((x) => <li>SQL matches <code>{x.regex}</code>{rule(x)}</li>)];
    case 'tags':
      return ["the client's tags", (r.rules || []).map((x) => (
        <li>
          tags {Object.entries(x.tags || {}).map(([k, v]) => <code>{v === null ? `${k} (any value)` : `${k}=${v}`}</code>)}
          {rule(x)}
        </li>
      ))];
    default:
      return [`unknown type ${JSON.stringify(r.type)}`, [<li class="muted">the node will say what is wrong on save</li>]];
  }
}

/// A routing trace (as a history record keeps it) in words.
export function TraceView({ trace }) {
  if (!trace) return <p class="muted">No routing trace was recorded.</p>;
  if (!Array.isArray(trace.decisions) && trace.finalGroup === undefined) {
    // A shape this Studio does not know (an older worker's): its fields as written.
    return (
      <dl class="facts">
        {Object.entries(trace).map(([k, v]) => <><dt>{k}</dt><dd>{typeof v === 'object' ? JSON.stringify(v) : String(v)}</dd></>)}
      </dl>
    );
  }
  const steps = trace.decisions || [];
  return (
    <div class="trace">
      {steps.length ? (
        <ol class="trace-steps">
          {steps.map((s) => (
            <li class={s.matched ? 'matched' : ''}>
              <code>{s.routerType}</code> router:{' '}
              {s.matched ? (trace.denied && s === steps[steps.length - 1]
                ? <>matched and <strong class="deny">denied</strong> the query{s.result ? <>: “{s.result}”</> : null}</>
                : <>matched<Arrow to={s.result} /></>)
                : <span class="muted">no match</span>}
            </li>
          ))}
        </ol>
      ) : <p class="muted">No router in the chain looked at it.</p>}
      <p class="trace-final">
        {trace.denied
          ? <>The query was <strong class="deny">denied</strong> by the routing.</>
          : <>Routed to group <strong>{trace.finalGroup}</strong>{trace.usedFallback ? ' by the routing fallback (no router matched)' : ''}.</>}
      </p>
    </div>
  );
}
