// The shell: the session decides between the login form and the pages;
// the hash decides which page. A 401 from any call brings the login form
// back without touching the hash, so logging in again returns to the page.
import { useEffect, useRef, useState } from 'preact/hooks';
import * as api from './api.js';
import { useRoute, href, navigate } from './router.js';
import { Loading, ErrorNote } from './ui.jsx';
import { Login } from './pages/login.jsx';
import { Dashboard } from './pages/dashboard.jsx';
import { Clusters } from './pages/clusters.jsx';
import { ClusterForm } from './pages/cluster_form.jsx';
import { Groups } from './pages/groups.jsx';
import { GroupForm } from './pages/group_form.jsx';
import { History } from './pages/history.jsx';
import { QueryDetail } from './pages/query_detail.jsx';
import { Workers } from './pages/workers.jsx';

const nav = [
  ['dashboard', 'Dashboard'],
  ['clusters', 'Clusters'],
  ['groups', 'Groups and routing'],
  ['history', 'Query history'],
  ['workers', 'Workers'],
];

function page(route) {
  const [top, a, b] = route.path;
  switch (top) {
    case 'dashboard': return <Dashboard />;
    case 'clusters':
      if (a === 'new' && !b) return <ClusterForm />;
      if (a && b === 'edit') return <ClusterForm name={a} />;
      return <Clusters />;
    case 'groups':
      if (a === 'new' && !b) return <GroupForm />;
      if (a && b === 'edit') return <GroupForm name={a} />;
      return <Groups />;
    case 'history':
      return a ? <QueryDetail id={a} /> : <History query={route.query} />;
    case 'workers': return <Workers />;
    default: return null;
  }
}

function DefaultCredentialsBanner() {
  return (
    <div class="banner" role="note">
      <strong>Default admin credentials.</strong> This node still uses the documented
      default admin / admin. Anyone who reaches its admin port can change the fleet:
      set <code>adminApi.username</code> and <code>adminApi.password</code> in its
      configuration.
    </div>
  );
}

function Shell({ session, route, onLogout }) {
  const current = route.path[0];
  return (
    <div class="shell">
      <a class="skip" href="#main" onClick={(e) => { e.preventDefault(); document.getElementById('main')?.focus(); }}>
        Skip to content
      </a>
      <nav class="side" aria-label="Studio">
        <div class="brand">QueryFlux <span>Studio</span></div>
        <ul>
          {nav.map(([key, label]) => (
            <li>
              <a href={href(`/${key}`)} aria-current={current === key ? 'page' : undefined}>{label}</a>
            </li>
          ))}
        </ul>
        <div class="side-foot">
          <div>Signed in as <strong>{session.user}</strong></div>
          <div class="muted">{session.role}{session.version ? ` · ${session.version}` : ''}</div>
          <button type="button" class="link" onClick={onLogout}>Log out</button>
        </div>
      </nav>
      <div class="content">
        {session.defaultCredentials ? <DefaultCredentialsBanner /> : null}
        <main id="main" tabindex="-1">{page(route)}</main>
      </div>
    </div>
  );
}

/// The login form over the page whose session ended: what was typed in a
/// form stays, and a save can be sent again once logged in.
function LoginAgain({ onLogin }) {
  const ref = useRef(null);
  useEffect(() => {
    const d = ref.current;
    if (d && !d.open) d.showModal();
  }, []);
  return (
    <dialog ref={ref} class="dialog login-dialog" aria-label="Log in again" onCancel={(e) => e.preventDefault()}>
      <p class="note warn">Your session has ended. Log in again to carry on where you were.</p>
      <Login onLogin={onLogin} />
    </dialog>
  );
}

export function App() {
  const route = useRoute();
  // undefined: asking; null: logged out; object: the session.
  const [session, setSession] = useState(undefined);
  const [expired, setExpired] = useState(false);
  const [error, setError] = useState(null);

  useEffect(() => {
    api.onUnauthorized(() => {
      api.setCsrfToken('');
      setExpired(true);
    });
    api.session().then((s) => {
      api.setCsrfToken(s.csrfToken);
      setSession(s);
    }).catch((e) => {
      if (e.status !== 401) setError(e);
      setSession(null);
    });
  }, []);

  // An empty or unknown hash lands on the dashboard.
  useEffect(() => {
    if (!nav.some(([key]) => key === route.path[0])) navigate('/dashboard', {}, { replace: true });
  }, [route]);

  useEffect(() => {
    const name = nav.find(([key]) => key === route.path[0]);
    document.title = name ? `${name[1]} · QueryFlux Studio` : 'QueryFlux Studio';
  }, [route]);

  const loggedIn = (s) => {
    api.setCsrfToken(s.csrfToken);
    setExpired(false);
    setSession(s);
  };

  if (session === undefined) return <div class="center"><Loading what="Studio" /></div>;
  if (session === null) {
    // A 401 before any session (the first read) is the login page itself.
    return (
      <div class="center">
        {error ? <ErrorNote error={error} /> : null}
        <Login onLogin={(s) => { setError(null); loggedIn(s); }} />
      </div>
    );
  }
  const logout = async () => {
    try { await api.logout(); } catch { /* the session is gone either way */ }
    api.setCsrfToken('');
    setExpired(false);
    setSession(null);
  };
  return (
    <>
      <Shell session={session} route={route} onLogout={logout} />
      {expired ? <LoginAgain onLogin={loggedIn} /> : null}
    </>
  );
}
