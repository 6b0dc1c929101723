/**
 * `@proxy-op/provider-aws`: the proxy-op provider for Amazon EC2, over
 * `@aws-sdk/client-ec2`. The shared face of every provider package, plus
 * this provider's own API (README, API): the credentials types, and the
 * backend errors found as a ProviderError's cause.
 *
 * @module
 */
export { AwsReason } from './check.js';
export { classify } from './classify.js';
export {
  type AwsConfig,
  type AwsConsistency,
  type AwsDeps,
  type AwsSecurityGroup,
  type AwsTimeouts,
  CONFIG_DEFAULTS,
  configSchema,
} from './config.js';
export type { AwsCredentials, AwsIdentity } from './credentials.js';
export { CredentialsError, Ec2ApiError } from './errors.js';
export { type AwsId, formatId, parseId } from './id.js';
export { profile, providerModule } from './module.js';

import { providerModule } from './module.js';

/** The provider module, as the default export. */
export default providerModule;
