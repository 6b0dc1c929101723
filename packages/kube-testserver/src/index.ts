/**
 * `@proxy-op/kube-testserver`: an in-process Kubernetes API server for
 * tests. The server, its options and fault controls, the request counters,
 * and the JSON and Status types its answers use.
 *
 * @module
 */
export type { Status, StatusCause } from './errors.js';
export type { RequestFilter, RequestRecord } from './faults.js';
export { RequestCounters } from './faults.js';
export type { JsonObject, JsonValue } from './json.js';
export type { KubeconfigOptions } from './kubeconfig.js';
export {
  defaults,
  type FailOptions,
  Faults,
  KubeTestServer,
  type KubeTestServerOptions,
  type Reply,
  type RequestOptions,
} from './server.js';
export type { ServingCertificates } from './tls.js';
export { servingCertificates } from './tls.js';
