// A Proxy's detail: its instance, conditions, recent Events and probe history (a chart and,
// for screen readers and exact figures, a table). Read from `api/proxies/NS/NAME` when opened,
// and again shortly after each message of the stream that changed it.
import { useEffect, useRef, useState } from 'preact/hooks';
import type { ProxyDetail } from '../../src/page/wire.js';
import { HistoryChart } from './charts.js';
import { ms, when } from './format.js';
import { PhaseBadge } from './table.js';

type Loaded =
  | { readonly state: 'loading' }
  | { readonly state: 'gone' }
  | { readonly state: 'failed'; readonly message: string }
  | { readonly state: 'ok'; readonly detail: ProxyDetail };

async function load(namespace: string, name: string): Promise<Loaded> {
  const r = await fetch(
    `api/proxies/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}`,
    {
      headers: { accept: 'application/json' },
    },
  );
  if (r.status === 404) return { state: 'gone' };
  if (!r.ok) return { state: 'failed', message: `${r.status} ${r.statusText}` };
  return { state: 'ok', detail: (await r.json()) as ProxyDetail };
}

function Field({ label, value }: { label: string; value: string | number | undefined }) {
  if (value === undefined || value === '') return null;
  return (
    <>
      <dt>{label}</dt>
      <dd>{String(value)}</dd>
    </>
  );
}

function Body({ d, now }: { d: ProxyDetail; now: number }) {
  const r = d.row;
  return (
    <>
      <dl class="facts">
        <Field label="Provider" value={r.provider} />
        <Field label="Instance ID" value={d.instance.providerID} />
        <Field
          label="Instance's provider"
          value={d.instance.provider !== r.provider ? d.instance.provider : undefined}
        />
        <Field label="Instance state" value={d.instance.state} />
        <Field label="Endpoint" value={r.endpoint} />
        <Field label="Credentials" value={r.secret} />
        <Field label="Egress IP" value={r.egressIP} />
        <Field label="Port" value={d.spec.port} />
        <Field label="Allowed sources" value={d.spec.allowedSources.join(', ')} />
        <Field
          label="Placement"
          value={Object.entries(d.spec.placement)
            .map(([k, v]) => `${k} ${v}`)
            .join(', ')}
        />
        <Field label="Cloud-init" value={d.spec.customCloudInit ? 'its own' : undefined} />
        <Field label="Remediation after" value={d.spec.unhealthyTimeout} />
        <Field label="Created" value={when(r.created, now)} />
        <Field
          label="Generation"
          value={`${d.generation} (observed ${d.instance.observedGeneration ?? '—'})`}
        />
        <Field label="Probe target" value={d.probe?.target} />
        <Field
          label="Median latency"
          value={d.probe?.p50TotalMs === undefined ? undefined : ms(d.probe.p50TotalMs)}
        />
        <Field
          label="Last error"
          value={r.error === undefined ? undefined : `${r.error.class}: ${r.error.message}`}
        />
      </dl>

      <h3>Conditions</h3>
      {d.conditions.length === 0 ? (
        <p class="muted">None yet.</p>
      ) : (
        <div class="table-wrap">
          <table class="plain conditions">
            <thead>
              <tr>
                <th scope="col">Type</th>
                <th scope="col">Status</th>
                <th scope="col">Reason</th>
                <th scope="col">Message</th>
                <th scope="col">Since</th>
              </tr>
            </thead>
            <tbody>
              {d.conditions.map((c) => (
                <tr key={c.type}>
                  <td data-label="Type">{c.type}</td>
                  <td data-label="Status" class={`cond-${c.status.toLowerCase()}`}>
                    {c.status}
                  </td>
                  <td data-label="Reason">{c.reason ?? ''}</td>
                  <td data-label="Message">{c.message ?? ''}</td>
                  <td data-label="Since">{when(c.lastTransitionTime, now)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}

      <h3>Probe history</h3>
      {d.history.length === 0 ? (
        <p class="muted">No probes in memory.</p>
      ) : (
        <>
          <HistoryChart history={d.history} now={now} />
          <details>
            <summary>The probes as a table</summary>
            <div class="table-wrap">
              <table class="plain history-table">
                <thead>
                  <tr>
                    <th scope="col">Time</th>
                    <th scope="col">Result</th>
                    <th scope="col">Connect</th>
                    <th scope="col">First byte</th>
                    <th scope="col">Total</th>
                    <th scope="col">Egress IP</th>
                  </tr>
                </thead>
                <tbody>
                  {d.history.map((p) => (
                    <tr key={p.time}>
                      <td data-label="Time">{when(p.time, now)}</td>
                      <td data-label="Result">{p.ok ? 'passed' : `failed: ${p.failure ?? ''}`}</td>
                      <td data-label="Connect">{ms(p.connectMs)}</td>
                      <td data-label="First byte">{ms(p.firstByteMs)}</td>
                      <td data-label="Total">{ms(p.totalMs)}</td>
                      <td data-label="Egress IP">{p.egressIP ?? ''}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          </details>
        </>
      )}

      <h3>Recent Events</h3>
      {d.events.length === 0 ? (
        <p class="muted">None recorded by this operator.</p>
      ) : (
        <ol class="events">
          {[...d.events].reverse().map((e, i) => (
            <li
              key={`${e.time}-${i}`}
              class={e.type === 'Warning' ? 'event event-warning' : 'event'}
            >
              <span class="event-time">{when(e.time, now)}</span>{' '}
              <span class="event-type">{e.type}</span> <span class="event-reason">{e.reason}</span>{' '}
              <span class="event-message">{e.message}</span>
            </li>
          ))}
        </ol>
      )}
    </>
  );
}

/** The detail of `namespace/name`; `version` changes when the stream says it changed. */
export function Detail(props: { namespace: string; name: string; version: number; now: number }) {
  const { namespace, name, version, now } = props;
  const [loaded, setLoaded] = useState<Loaded>({ state: 'loading' });
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    heading.current?.focus();
  }, [namespace, name]);
  useEffect(() => {
    let cancelled = false;
    const t = setTimeout(
      () => {
        load(namespace, name).then(
          (l) => {
            if (!cancelled) setLoaded(l);
          },
          (err: unknown) => {
            if (!cancelled) setLoaded({ state: 'failed', message: String(err) });
          },
        );
      },
      version === 0 ? 0 : 250,
    );
    return () => {
      cancelled = true;
      clearTimeout(t);
    };
  }, [namespace, name, version]);
  return (
    <section class="detail" aria-labelledby="detail-title">
      <p>
        <a href="#/" class="back">
          ← All Proxies
        </a>
      </p>
      <h2 id="detail-title" tabIndex={-1} ref={heading}>
        {`${namespace}/${name}`}{' '}
        {loaded.state === 'ok' ? <PhaseBadge phase={loaded.detail.row.phase} /> : null}
      </h2>
      {loaded.state === 'loading' ? <p class="muted">Loading…</p> : null}
      {loaded.state === 'gone' ? <p>This Proxy does not exist (any more).</p> : null}
      {loaded.state === 'failed' ? <p>{`Could not load it: ${loaded.message}`}</p> : null}
      {loaded.state === 'ok' ? <Body d={loaded.detail} now={now} /> : null}
    </section>
  );
}
