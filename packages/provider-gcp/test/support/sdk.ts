// Test support (not a test file): loads @google-cloud/compute and builds one client, once per
// test file, in a hook: the first load takes seconds (more on a busy machine), and no test's
// own time limit should pay for it.
import { PassThroughClient } from 'google-auth-library';

let warming: Promise<void> | undefined;

/** Loads the SDK and its protos (cached for the process); call from a `beforeAll`. */
export function warmSdk(): Promise<void> {
  warming ??= (async () => {
    const { InstancesClient } = await import('@google-cloud/compute');
    const client = new InstancesClient({ fallback: true, authClient: new PassThroughClient() });
    await client.close();
  })();
  return warming;
}

/** How long a hook may take to warm the SDK. */
export const WARM_MS = 300_000;
