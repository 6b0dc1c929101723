// The page: a header with this operator's role and the stream's state, then either the
// overview and the Proxies table, or one Proxy's detail (`#/proxies/NS/NAME`). A standby
// replica's page says so and names the replica that leads, with the command that reaches it.
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { PageRole } from '../../src/page/wire.js';
import { Detail } from './detail.js';
import type { Live, LiveState } from './live.js';
import { Overview } from './overview.js';
import { FIRST_VIEW, ProxiesTable, selectRows, type TableView } from './table.js';

function useLive(live: Live): LiveState {
  const [state, setState] = useState(live.state);
  useEffect(() => live.subscribe(() => setState(live.state)), [live]);
  return state;
}

function useNow(everyMs: number): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), everyMs);
    return () => clearInterval(t);
  }, [everyMs]);
  return now;
}

function useRoute(): { namespace: string; name: string } | undefined {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const on = () => setHash(location.hash);
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  const m = /^#\/proxies\/([^/]+)\/([^/]+)$/.exec(hash);
  if (m === null) return undefined;
  try {
    return { namespace: decodeURIComponent(m[1] ?? ''), name: decodeURIComponent(m[2] ?? '') };
  } catch {
    return undefined;
  }
}

const CONNECTION_TEXT = {
  connecting: 'connecting…',
  live: 'live',
  reconnecting: 'reconnecting… (what is shown may be out of date)',
} as const;

function where(role: PageRole | undefined): string {
  if (role === undefined) return '';
  if (role.store === 'standalone') return `standalone, ${role.where ?? ''}`;
  if (role.store === 'kubernetes') return `Kubernetes, ${role.where ?? ''}`;
  return 'in memory';
}

function Standby({ role }: { role: PageRole }) {
  const ns = role.leaseNamespace ?? 'proxy-op-system';
  return (
    <section class="standby" aria-labelledby="h-standby">
      <h2 id="h-standby">This replica is on standby</h2>
      <p>
        {role.leader === undefined
          ? 'It waits for the leader election Lease; no replica holds it right now.'
          : 'Another replica holds the leader election Lease and serves the status page.'}
      </p>
      {role.leader === undefined ? null : (
        <dl class="facts">
          <dt>Leading Pod</dt>
          <dd class="mono leader-pod">{role.leaderPod ?? role.leader}</dd>
          <dt>Its identity</dt>
          <dd class="mono">{role.leader}</dd>
          <dt>This replica</dt>
          <dd class="mono">{role.identity ?? ''}</dd>
        </dl>
      )}
      {role.leaderPod === undefined ? null : (
        <p>
          Reach its page with{' '}
          <code>{`kubectl -n ${ns} port-forward pod/${role.leaderPod} ${role.port ?? 9465}`}</code>
        </p>
      )}
    </section>
  );
}

/** The whole page over the live state. */
export function App({ live }: { live: Live }) {
  const state = useLive(live);
  const now = useNow(1000);
  const route = useRoute();
  const [view, setView] = useState<TableView>(FIRST_VIEW);
  // A version per open detail: bumped when a message changed that Proxy.
  const detailVersion = useRef({ key: '', version: 0, seen: -1 });
  const key = route === undefined ? '' : `${route.namespace}/${route.name}`;
  const dv = detailVersion.current;
  if (dv.key !== key) detailVersion.current = { key, version: 0, seen: state.version };
  else if (dv.seen !== state.version) {
    if (state.changed.has(key)) dv.version++;
    dv.seen = state.version;
  }
  const rows = useMemo(() => selectRows(state.proxies.values(), view), [state.proxies, view]);
  const providers = useMemo(() => [...state.providers.keys()], [state.providers]);
  const lastRoute = useRef<string>('');
  useEffect(() => {
    // Back from a detail: focus its row's link again.
    if (route === undefined && lastRoute.current !== '') {
      const link = document.querySelector<HTMLAnchorElement>(
        `tr[data-key="${CSS.escape(lastRoute.current)}"] a`,
      );
      link?.focus();
    }
    lastRoute.current = key;
  }, [key]);
  const role = state.role;
  const leading = role?.state === 'leading';
  return (
    <>
      <a class="skip" href="#main">
        Skip to the content
      </a>
      <header class="top">
        <h1>proxy-op</h1>
        <p class="where">{where(role)}</p>
        <p class={`conn conn-${state.connection}`} role="status">
          <span aria-hidden="true">{state.connection === 'live' ? '● ' : '○ '}</span>
          {CONNECTION_TEXT[state.connection]}
        </p>
      </header>
      <main id="main" tabIndex={-1}>
        {role === undefined ? <p class="muted">Loading…</p> : null}
        {role !== undefined && role.state === 'standby' ? <Standby role={role} /> : null}
        {role !== undefined && role.state === 'starting' ? (
          <p>This replica is starting: it has not listed the Proxies yet.</p>
        ) : null}
        {leading && route !== undefined ? (
          <Detail
            namespace={route.namespace}
            name={route.name}
            version={detailVersion.current.version}
            now={now}
          />
        ) : null}
        {leading && route === undefined ? (
          <>
            <Overview state={state} now={now} />
            <section aria-labelledby="h-proxies">
              <h2 id="h-proxies">Proxies</h2>
              <ProxiesTable
                rows={rows}
                providers={providers}
                total={state.proxies.size}
                view={view}
                onView={setView}
                now={now}
              />
            </section>
          </>
        ) : null}
      </main>
    </>
  );
}
