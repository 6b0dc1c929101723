/**
 * A provider error of a reconcile pass, into the Proxy's status.
 *
 * @module
 */
import { errorClassOf } from '@proxy-op/contract';
import { messageOf } from '../runtime/message.js';
import type { ReconcileResult } from '../runtime/queue.js';
import type { StepContext } from './observe.js';

/**
 * A provider error of the steps above, into status: Permanent latches the
 * spec hash, QuotaExceeded waits out its own backoff, anything else is
 * rethrown for the queue's backoff.
 */
export async function failPass(
  c: StepContext,
  err: unknown,
  hash: string,
): Promise<ReconcileResult> {
  const st = c.status.st;
  const cls = errorClassOf(err);
  const message = messageOf(err);
  st.lastError = { class: cls, message };
  if (cls === 'Permanent') {
    st.latchedSpecHash = hash;
    st.phase = 'Failed';
    c.status.cond('Latched', 'True', 'PermanentError', message);
    c.status.cond('Ready', 'False', 'PermanentError', message);
    await c.status.write();
    c.log.warn({ err: message }, 'permanent provider error; latched until the spec changes');
    c.event(
      'Warning',
      'Latched',
      `permanent provider error, nothing more is tried until the spec changes: ${message}`,
    );
    return {};
  }
  if (cls === 'QuotaExceeded') {
    c.status.cond('QuotaExceeded', 'True', 'QuotaExceeded', message);
    c.status.cond('Ready', 'False', 'QuotaExceeded', message);
    await c.status.write();
    const ms = c.env.quota.next(c.key);
    c.log.info({ err: message, retryInMs: ms }, 'provider quota exceeded; retrying later');
    return { requeueAfter: ms };
  }
  await c.status.write();
  throw err;
}
