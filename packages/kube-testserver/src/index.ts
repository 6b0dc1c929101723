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
