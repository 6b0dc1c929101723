// The two charts of the status page, drawn as SVG by hand (twenty points do not need a chart
// library): a row's latency sparkline and a Proxy's probe history. Each says in words what it
// draws (its label), and failed probes are marked by shape as well as colour.
import type { PageProbe } from '../../src/page/wire.js';
import { ms, when } from './format.js';

/** A short summary of latencies, for a chart's label. */
function summary(values: readonly (number | null)[]): string {
  const ok = values.filter((v): v is number => v !== null);
  const failed = values.length - ok.length;
  if (values.length === 0) return 'no probes yet';
  const parts = [`${values.length} probes`];
  if (ok.length > 0) parts.push(`${ms(Math.min(...ok))} to ${ms(Math.max(...ok))}`);
  if (failed > 0) parts.push(`${failed} failed`);
  return parts.join(', ');
}

/** The recent probes' latency as a small line; failed probes as crosses on the baseline. */
export function Sparkline({ values }: { values: readonly (number | null)[] }) {
  const w = 72;
  const h = 18;
  const max = Math.max(1, ...values.filter((v): v is number => v !== null));
  const step = values.length > 1 ? w / (values.length - 1) : 0;
  const points: string[] = [];
  const crosses: Array<[number, number]> = [];
  values.forEach((v, i) => {
    const x = values.length > 1 ? i * step : w / 2;
    if (v === null) crosses.push([x, h - 3]);
    else points.push(`${x.toFixed(1)},${(h - 2 - (v / max) * (h - 5)).toFixed(1)}`);
  });
  return (
    <svg
      class="spark"
      width={w}
      height={h}
      viewBox={`-2 0 ${w + 4} ${h}`}
      role="img"
      aria-label={`latency: ${summary(values)}`}
    >
      {points.length > 1 ? <polyline class="spark-line" points={points.join(' ')} /> : null}
      {points.length === 1 ? (
        <circle
          class="spark-dot"
          cx={points[0]?.split(',')[0]}
          cy={points[0]?.split(',')[1]}
          r="1.5"
        />
      ) : null}
      {crosses.map(([x, y]) => (
        <path key={x} class="spark-fail" d={`M${x - 2} ${y - 2}l4 4m0 -4l-4 4`} />
      ))}
    </svg>
  );
}

/** A Proxy's probe history: a bar per probe (its total latency); a failed one as a full-height hatched bar with a cross. */
export function HistoryChart({ history, now }: { history: readonly PageProbe[]; now: number }) {
  const w = 600;
  const h = 160;
  const top = 16;
  const bottom = 22;
  const left = 44;
  const ok = history.filter((p) => p.ok).map((p) => p.totalMs);
  const max = Math.max(1, ...ok);
  const slot = (w - left) / Math.max(history.length, 1);
  const bar = Math.max(2, slot * 0.7);
  const first = history[0];
  const last = history.at(-1);
  return (
    <svg
      class="history"
      viewBox={`0 0 ${w} ${h}`}
      role="img"
      aria-label={`probe history: ${summary(history.map((p) => (p.ok ? p.totalMs : null)))}`}
    >
      <defs>
        <pattern
          id="hatch"
          width="6"
          height="6"
          patternUnits="userSpaceOnUse"
          patternTransform="rotate(45)"
        >
          <line class="hatch" x1="0" y1="0" x2="0" y2="6" />
        </pattern>
      </defs>
      <line class="axis" x1={left} y1={top} x2={left} y2={h - bottom} />
      <line class="axis" x1={left} y1={h - bottom} x2={w} y2={h - bottom} />
      <text class="tick" x={left - 6} y={top + 4} text-anchor="end">
        {ms(max)}
      </text>
      <text class="tick" x={left - 6} y={h - bottom} text-anchor="end">
        0
      </text>
      {history.map((p, i) => {
        const x = left + i * slot + (slot - bar) / 2;
        const height = p.ok
          ? Math.max(1, (p.totalMs / max) * (h - top - bottom))
          : h - top - bottom;
        return (
          <g key={p.time}>
            <rect
              class={p.ok ? 'bar' : 'bar bar-fail'}
              x={x}
              y={h - bottom - height}
              width={bar}
              height={height}
            >
              <title>
                {`${when(p.time, now)}: ${p.ok ? ms(p.totalMs) : `failed, ${p.failure ?? ''}`}`}
              </title>
            </rect>
            {p.ok ? null : (
              <path class="bar-cross" d={`M${x + bar / 2 - 4} ${top + 2}l8 8m0 -8l-8 8`} />
            )}
          </g>
        );
      })}
      {first === undefined ? null : (
        <text class="tick" x={left} y={h - 6}>
          {when(first.time, now)}
        </text>
      )}
      {last === undefined || history.length < 2 ? null : (
        <text class="tick" x={w} y={h - 6} text-anchor="end">
          {when(last.time, now)}
        </text>
      )}
    </svg>
  );
}
