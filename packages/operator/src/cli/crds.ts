/**
 * `proxy-op crds`: the CustomResourceDefinitions of Proxy and ProviderHealth
 * on stdout (`proxy-op crds | kubectl apply -f -`).
 *
 * @module
 */
import { crdsYaml } from '../api/crds.js';

/** Runs `proxy-op crds`; resolves with the exit code. */
export async function crds(): Promise<number> {
  process.stdout.write(crdsYaml());
  return 0;
}
