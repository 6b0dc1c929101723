/**
 * `@proxy-op/probe`: does a client get through this proxy? `probe()` sends
 * an absolute-form GET and a CONNECT tunnel through a forward proxy to a
 * whoami target, each with a fresh nonce, and reports every step, the
 * latencies and the egress IP; `startWhoami()` is that target.
 *
 * @module
 */
export { type SelfSignedCertificate, selfSignedCertificate } from './cert.js';
export { ProbeAbortedError } from './errors.js';
export { probe } from './probe.js';
export {
  PROBE_DEFAULTS,
  type ProbeCheck,
  type ProbeCheckName,
  type ProbeCredentials,
  type ProbeLatency,
  type ProbeOptions,
  type ProbeProxy,
  type ProbeResult,
  type ProbeStep,
  type ProbeStepName,
  type ProbeTarget,
  type ProbeTargetSpec,
  type ProbeTls,
} from './types.js';
export { startWhoami, type Whoami, type WhoamiAnswer, type WhoamiOptions } from './whoami.js';
