/**
 * A duration as kubectl's AGE column shows it: ~2-3 significant figures
 * (`45s`, `3m20s`, `5h12m`, `12d`), as apimachinery's `HumanDuration`.
 */
export function humanDuration(ms: number): string {
  const seconds = Math.trunc(ms / 1000);
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.trunc(seconds / 60);
  if (minutes < 10) {
    const s = seconds % 60;
    return s === 0 ? `${minutes}m` : `${minutes}m${s}s`;
  }
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.trunc(minutes / 60);
  if (hours < 8) {
    const m = minutes % 60;
    return m === 0 ? `${hours}h` : `${hours}h${m}m`;
  }
  if (hours < 48) return `${hours}h`;
  if (hours < 24 * 8) {
    const h = hours % 24;
    return h === 0 ? `${Math.trunc(hours / 24)}d` : `${Math.trunc(hours / 24)}d${h}h`;
  }
  if (hours < 24 * 365 * 2) return `${Math.trunc(hours / 24)}d`;
  if (hours < 24 * 365 * 8) {
    const dy = Math.trunc(hours / 24) % 365;
    const y = Math.trunc(hours / 24 / 365);
    return dy === 0 ? `${y}y` : `${y}y${dy}d`;
  }
  return `${Math.trunc(hours / 24 / 365)}y`;
}

/** The age of an RFC 3339 timestamp, or `<unknown>` when it is missing. */
export function age(timestamp: unknown, now = Date.now()): string {
  if (typeof timestamp !== 'string') return '<unknown>';
  const t = Date.parse(timestamp);
  return Number.isNaN(t) ? '<invalid>' : humanDuration(now - t);
}

/** Now as `metav1.Time` writes it: RFC 3339, seconds precision, UTC. */
export function nowTime(now = new Date()): string {
  return `${now.toISOString().slice(0, 19)}Z`;
}

/** Now as `metav1.MicroTime` writes it: RFC 3339 with 6 fractional digits. */
export function nowMicroTime(now = new Date()): string {
  return `${now.toISOString().slice(0, 23)}000Z`;
}
