// Peer: a scripted provider with profile credentialRotation: replace (no updateAuth), over the
// memory store, with the pass's clock in the test's hands: the make-before-break rotation step by
// step, and cut at each step. (The same rotation through real proxies: auth-replace.test.ts.)
import { describe, expect, it } from 'vitest';
import { getCondition } from '../src/api/conditions.js';
import { instanceName } from '../src/api/naming.js';
import { DEFAULTS } from '../src/defaults.js';
import { Reconciler } from '../src/proxy/reconciler.js';
import { MemoryCredentialStore } from '../src/store/credentials.js';
import { MemoryStore } from '../src/store/proxies.js';
import { providerSet, ScriptedBackend, spec, testRegistry } from './support.js';

const OPTS = { ...DEFAULTS, deletionPollMs: 11, provisioningPollMs: 22, readyResyncMs: 33_000 };
const CONFIG = 'installation: site-1\nproviders:\n  - name: lab\n    type: scripted\n';
const HOUR = 3_600_000;
const FIRST = instanceName('default', 'web');
const SECOND = instanceName('default', 'web', 1);

async function setup() {
  const backend = new ScriptedBackend();
  const { registry } = testRegistry({ scripted: backend });
  const providers = await providerSet(CONFIG, registry);
  const store = new MemoryStore();
  let t = Date.parse('2026-01-01T00:00:00Z');
  const advance = (ms: number) => {
    t += ms;
  };
  const credentials = new MemoryCredentialStore();
  const rec = new Reconciler(
    { store, providers, now: () => new Date(t), random: () => 0.5, credentials },
    OPTS,
  );
  const status = () => store.get('default/web')?.status;
  const kept = () => credentials.kept.get('memory:default/web');
  const pass = () => rec.reconcile('default/web');
  store.apply(
    'default',
    'web',
    spec({ provider: 'lab', auth: { rotateEvery: '1h', overlap: '10m' } }),
  );
  await pass();
  expect(status()?.phase).toBe('Ready');
  return { backend, store, status, kept, pass, advance };
}

/** The usernames a scripted VM's cloud-init puts in its password file. */
function usersOf(cloudInit: string | undefined): string[] {
  return [...(cloudInit ?? '').matchAll(/^ +([^\s:]+):\$6\$/gm)].map((m) => m[1] as string);
}

describe('make-before-break rotation on a provider that cannot change a running proxy', () => {
  it('makes a successor with the next credential alone, switches to it once it runs, deletes the old one after the overlap', async () => {
    const { backend, store, status, kept, pass, advance } = await setup();
    const first = kept()?.record.current;
    expect(usersOf(backend.vms.get(FIRST)?.cloudInit)).toEqual([first?.username]);
    advance(HOUR);
    backend.slowBoot = true;
    expect((await pass()).requeueAfter).toBeLessThanOrEqual(OPTS.provisioningPollMs);
    const next = kept()?.record.next;
    expect(next?.username).not.toBe(first?.username);
    // The successor runs the next credential alone; the Proxy stays Ready on its instance.
    expect(usersOf(backend.vms.get(SECOND)?.cloudInit)).toEqual([next?.username]);
    expect(status()?.providerID).toBe(`scripted/${FIRST}`);
    expect(status()?.credentials?.successor).toEqual({ slot: 1, providerID: `scripted/${SECOND}` });
    expect(status()?.phase).toBe('Ready');
    expect(getCondition(status()?.conditions, 'Credentials')?.reason).toBe('Rotating');
    // Still starting: nothing switches.
    await pass();
    expect(kept()?.record.current.username).toBe(first?.username);
    backend.boot(SECOND);
    await pass();
    const ip = backend.vms.get(SECOND)?.ip;
    expect(status()).toMatchObject({
      providerID: `scripted/${SECOND}`,
      endpoint: `http://${ip}:3128`,
      ip,
      phase: 'Ready',
      credentials: { slot: 1, retiring: { providerID: `scripted/${FIRST}`, provider: 'lab' } },
    });
    expect(status()?.credentials?.successor).toBeUndefined();
    expect(kept()?.record.current.username).toBe(next?.username);
    expect(kept()?.record.previous?.username).toBe(first?.username);
    expect(new URL(kept()?.url ?? '').host).toBe(`${ip}:3128`);
    expect(store.events.map((e) => e.reason)).toContain('Rotated');
    // Through the overlap both instances run.
    advance(9 * 60_000);
    await pass();
    expect([...backend.vms.keys()].sort()).toEqual([FIRST, SECOND].sort());
    advance(60_000);
    await pass();
    expect([...backend.vms.keys()]).toEqual([SECOND]);
    expect(status()?.credentials?.retiring).toBeUndefined();
    expect(kept()?.record.previous).toBeUndefined();
    expect(getCondition(status()?.conditions, 'Credentials')?.reason).toBe('Generated');
    expect(store.events.map((e) => e.reason)).toContain('Retired');
    // The next rotation goes back to the first name.
    advance(HOUR);
    backend.slowBoot = false;
    await pass();
    await pass();
    expect(status()?.providerID).toBe(`scripted/${FIRST}`);
    expect(status()?.credentials?.slot).toBe(0);
  });

  it('a pass cut at the successor’s Create, or before its ID was written, finds the same instance again', async () => {
    const { backend, status, pass, advance, store } = await setup();
    advance(HOUR);
    backend.fail('create', 'Transient');
    await expect(pass()).rejects.toThrow(/scripted Transient on create/);
    expect(status()?.credentials?.successor).toEqual({ slot: 1 });
    backend.slowBoot = true;
    await pass();
    expect(status()?.credentials?.successor?.providerID).toBe(`scripted/${SECOND}`);
    // The write of the ID lost: the next Create of the same name answers the same instance.
    const st = structuredClone(status());
    if (st?.credentials?.successor === undefined) throw new Error('no successor');
    delete st.credentials.successor.providerID;
    await store.updateStatus('default/web', st);
    await pass();
    expect(status()?.credentials?.successor?.providerID).toBe(`scripted/${SECOND}`);
    expect(backend.vms.size).toBe(2);
  });

  it('a successor that stops is deleted and made again', async () => {
    const { backend, status, pass, advance } = await setup();
    advance(HOUR);
    backend.slowBoot = true;
    await pass();
    backend.setState(SECOND, 'Terminated');
    await pass();
    expect(backend.vms.has(SECOND)).toBe(false);
    expect(status()?.credentials?.successor).toEqual({ slot: 1 });
    await pass();
    expect(backend.vms.get(SECOND)?.state).toBe('Provisioning');
  });

  it('a spec change mid-rotation deletes the successor with the instance; deleting the Proxy deletes every instance', async () => {
    const { backend, store, status, pass, advance } = await setup();
    advance(HOUR);
    backend.slowBoot = true;
    await pass();
    expect(backend.vms.size).toBe(2);
    store.apply(
      'default',
      'web',
      spec({ provider: 'lab', port: 3129, auth: { rotateEvery: '1h', overlap: '10m' } }),
    );
    await pass();
    expect(backend.vms.has(SECOND)).toBe(false);
    expect(status()?.credentials?.successor).toBeUndefined();
    // The new instance, then the rotation that was under way goes on with a new successor.
    backend.slowBoot = false;
    backend.boot(FIRST);
    await pass();
    await pass();
    expect(status()?.credentials?.retiring).toBeDefined();
    expect(backend.vms.size).toBe(2);
    store.delete('default/web');
    await pass();
    expect(backend.vms.size).toBe(0);
    expect(store.get('default/web')).toBeUndefined();
  });
});
