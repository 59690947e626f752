import { useState } from 'preact/hooks';
import * as api from '../api.js';

export function Login({ onLogin }) {
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');

  const submit = async (e) => {
    e.preventDefault();
    setBusy(true);
    setError('');
    try {
      onLogin(await api.login(username, password));
    } catch (err) {
      // The node says which: wrong credentials (401) or a malformed body.
      const msg = err.status === 401 ? 'Wrong user name or password.' : err.message;
      setError(msg);
      setBusy(false);
    }
  };

  return (
    <form class="login card" onSubmit={submit} aria-labelledby="login-title">
      <h1 id="login-title">QueryFlux <span>Studio</span></h1>
      <p class="muted">Log in with the node's admin credentials (<code>adminApi.username</code> and <code>adminApi.password</code>).</p>
      <div class="field">
        <label for="login-user">User name</label>
        <input id="login-user" name="username" autocomplete="username" required autofocus
          value={username} onInput={(e) => setUsername(e.currentTarget.value)} />
      </div>
      <div class="field">
        <label for="login-password">Password</label>
        <input id="login-password" name="password" type="password" autocomplete="current-password" required
          value={password} onInput={(e) => setPassword(e.currentTarget.value)} />
      </div>
      {error ? <div class="note error" role="alert">{error}</div> : null}
      <button type="submit" class="primary" disabled={busy}>{busy ? 'Logging in…' : 'Log in'}</button>
    </form>
  );
}
