import { useEffect, useRef, useState } from 'preact/hooks';

/// Loads with `load()` now and again every `every` ms (a number, or a
/// function of the last data, so a page can poll faster while something
/// moves). The timer dies with the component: leaving a page stops it.
/// A failed refresh keeps the last data and sets `error`.
export function usePoll(load, every, deps = []) {
  const [state, setState] = useState({ data: undefined, error: null, loading: true, at: 0 });
  const [tick, setTick] = useState(0);
  const everyRef = useRef(every);
  everyRef.current = every;
  useEffect(() => {
    let alive = true;
    let timer;
    const run = async () => {
      let data;
      try {
        data = await load();
        if (alive) setState({ data, error: null, loading: false, at: Date.now() });
      } catch (error) {
        if (alive) setState((s) => ({ ...s, error, loading: false }));
      }
      if (!alive) return;
      const e = everyRef.current;
      const ms = typeof e === 'function' ? e(data) : e;
      if (ms) timer = setTimeout(run, ms);
    };
    run();
    return () => {
      alive = false;
      clearTimeout(timer);
    };
  }, [...deps, tick]);
  return { ...state, reload: () => setTick((t) => t + 1) };
}

/// Loads once (per deps), no polling.
export function useLoad(load, deps = []) {
  return usePoll(load, 0, deps);
}

/// [busy, error, run, setError]: run(fn) sets busy while fn runs, keeps its
/// error, and resolves to whether fn succeeded.
export function useAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const alive = useRef(true);
  useEffect(() => () => { alive.current = false; }, []);
  const run = async (fn) => {
    setBusy(true);
    setError(null);
    try {
      await fn();
      return true;
    } catch (e) {
      if (alive.current) setError(e);
      return false;
    } finally {
      if (alive.current) setBusy(false);
    }
  };
  return [busy, error, run, setError];
}
