/**
 * A Running instance's data plane, into the status a reconcile pass
 * builds: the phase and `Ready` (Ready only once a probe passed, when
 * probing is on), the `DataPlane` condition, `status.egressIP` and
 * `status.probe`, and, for a Proxy that opted in to remediation, the
 * provider's short-circuit as `RemediationAllowed`.
 *
 * @module
 */
import type { StatusDraft } from '../proxy/status-draft.js';
import type { DataPlaneView } from './scheduler.js';

/** What the pass is to do after {@link applyDataPlane}. */
export type DataPlaneAction = 'write' | 'remediate' | 'restricted';

/**
 * Sets the status of a Running instance at `endpoint` from `view`; says
 * whether the instance is to be replaced (remediation due and allowed), or
 * its replacement is held by the short-circuit. `note` says, where the
 * provider no longer reports the instance Running, what it reports.
 */
export function applyDataPlane(
  draft: StatusDraft,
  view: DataPlaneView,
  endpoint: string,
  note: string | undefined,
): DataPlaneAction {
  const st = draft.st;
  const serving = `serving at ${endpoint}`;
  if (!view.probing) {
    delete st.egressIP;
    delete st.probe;
    draft.cond('DataPlane', 'Unknown', view.reason, view.message);
    st.phase = 'Ready';
    draft.cond('Ready', 'True', 'Running', serving);
    return 'write';
  }
  // Until its first probe, a record started from the status keeps what it says.
  if (view.status !== undefined) st.probe = view.status;
  if (view.egressIP !== undefined) st.egressIP = view.egressIP;
  if (view.verdict === 'passing') {
    draft.cond('DataPlane', 'True', 'ProbePassed', view.message);
    st.phase = 'Ready';
    draft.cond('Ready', 'True', 'Running', serving);
  } else if (view.verdict === 'failing') {
    st.phase = 'Unhealthy';
    draft.cond('DataPlane', 'False', 'ProbeFailed', view.message);
    draft.cond(
      'Ready',
      'False',
      'ProbeFailed',
      `${view.message}${note === undefined ? '' : `; ${note}`}`,
    );
  } else {
    st.phase = 'Provisioning';
    draft.cond('DataPlane', 'Unknown', 'ProbeStarting', view.message);
    draft.cond(
      'Ready',
      'False',
      'ProbeStarting',
      `the instance runs at ${endpoint}; ${view.message}`,
    );
  }
  const r = view.remediation;
  if (r === undefined) return 'write';
  draft.cond(
    'RemediationAllowed',
    r.circuit.allowed ? 'True' : 'False',
    r.circuit.reason,
    r.circuit.message,
  );
  if (!r.due) return 'write';
  return r.circuit.allowed ? 'remediate' : 'restricted';
}
