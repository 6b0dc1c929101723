// Peer: a real Proxmox VE host, only when the PROXMOX_TEST_* variables are set.
import { readFileSync } from 'node:fs';
import {
  createProvider,
  errorClassOf,
  isNotFound,
  type Logger,
  type Provider,
} from '@proxy-op/contract';
import { createLogSink, createSpanRecorder } from '@proxy-op/providertest';
import { describe, expect, it } from 'vitest';
import { HttpProxmoxApi } from '../src/client.js';
import { parseId } from '../src/id.js';
import { providerModule } from '../src/module.js';

const env = process.env;
const REQUIRED = [
  'PROXMOX_TEST_URL',
  'PROXMOX_TEST_TOKEN_FILE',
  'PROXMOX_TEST_NODE',
  'PROXMOX_TEST_TEMPLATE_VMID',
  'PROXMOX_TEST_ISO_STORAGE',
] as const;
const missing = REQUIRED.filter((k) => (env[k] ?? '') === '');
if (missing.length > 0) {
  console.warn(
    `skipping the real-host Proxmox tests: set ${missing.join(', ')} (see README, Testing)`,
  );
}
/** PROXMOX_TEST_TIMEOUT: `20m`, `90s` or plain seconds; default 20 minutes. */
function parseTimeout(text: string | undefined): number {
  const m = /^(\d+)(m|s)?$/.exec(text ?? '');
  if (m === null) return 20 * 60_000;
  return Number(m[1]) * (m[2] === 'm' ? 60_000 : 1000);
}
const timeoutMs = parseTimeout(env.PROXMOX_TEST_TIMEOUT);

/** PROXMOX_TEST_LOG_LEVEL (`debug`, `trace`) prints the provider's lines at that level and above. */
function consoleLogger(level: string | undefined): Logger {
  const order = ['trace', 'debug', 'info', 'warn', 'error'];
  const min = order.indexOf(level ?? 'warn');
  const make = (bindings: Record<string, unknown>): Logger => {
    const at =
      (l: string) =>
      (a: Record<string, unknown> | string, msg?: string): void => {
        if (order.indexOf(l) < min) return;
        const [fields, text] = typeof a === 'string' ? [{}, a] : [a, msg ?? ''];
        console.error(l, text, JSON.stringify({ ...bindings, ...fields }));
      };
    return {
      trace: at('trace'),
      debug: at('debug'),
      info: at('info'),
      warn: at('warn'),
      error: at('error'),
      child: (b) => make({ ...bindings, ...b }),
    };
  };
  return make({});
}

function config(): Record<string, unknown> {
  const vmidRange =
    env.PROXMOX_TEST_VMID_MIN !== undefined || env.PROXMOX_TEST_VMID_MAX !== undefined
      ? {
          vmidRange: {
            ...(env.PROXMOX_TEST_VMID_MIN ? { min: Number(env.PROXMOX_TEST_VMID_MIN) } : {}),
            ...(env.PROXMOX_TEST_VMID_MAX ? { max: Number(env.PROXMOX_TEST_VMID_MAX) } : {}),
          },
        }
      : {};
  return {
    url: env.PROXMOX_TEST_URL,
    tokenFile: env.PROXMOX_TEST_TOKEN_FILE,
    ...(env.PROXMOX_TEST_CA_FILE ? { caFile: env.PROXMOX_TEST_CA_FILE } : {}),
    ...(env.PROXMOX_TEST_INSECURE === '1' || env.PROXMOX_TEST_INSECURE === 'true'
      ? { insecureSkipTLSVerify: true }
      : {}),
    nodes: [env.PROXMOX_TEST_NODE],
    isoStorage: env.PROXMOX_TEST_ISO_STORAGE,
    ...(env.PROXMOX_TEST_STORAGE ? { storage: env.PROXMOX_TEST_STORAGE } : {}),
    ...(env.PROXMOX_TEST_BRIDGE ? { bridge: env.PROXMOX_TEST_BRIDGE } : {}),
    ...(env.PROXMOX_TEST_VLAN_TAG ? { vlanTag: Number(env.PROXMOX_TEST_VLAN_TAG) } : {}),
    ...vmidRange,
    templates: { test: { vmid: Number(env.PROXMOX_TEST_TEMPLATE_VMID) } },
    machineTypes: { small: { cores: 1, memoryMiB: 1024 } },
  };
}

/** A logger writing every line to both `a` and `b`. */
function tee(a: Logger, b: Logger): Logger {
  const both =
    (k: 'trace' | 'debug' | 'info' | 'warn' | 'error') =>
    (x: Record<string, unknown> | string, m?: string): void => {
      for (const l of [a, b]) {
        if (typeof x === 'string') l[k](x);
        else l[k](x, m);
      }
    };
  return {
    trace: both('trace'),
    debug: both('debug'),
    info: both('info'),
    warn: both('warn'),
    error: both('error'),
    child: (bindings) => tee(a.child(bindings), b.child(bindings)),
  };
}

describe.skipIf(missing.length > 0)('a real Proxmox VE host', () => {
  it('Proxmox: Check reports the node ready on a real host', async () => {
    const p = await createProvider(providerModule, 'proxmox-test', config(), {});
    try {
      const [r] = await p.check!();
      expect(r?.reason, r?.message).toBe('Reachable');
      expect(r?.details.pveVersion).toBeTruthy();
    } finally {
      await p.close?.();
    }
  });

  it(
    'Proxmox: lifecycle on a real host',
    async () => {
      const logs = createLogSink();
      const spans = createSpanRecorder();
      const sentinel = `CLOUDINIT-SENTINEL-${Date.now()}`;
      const logger = tee(logs.logger, consoleLogger(env.PROXMOX_TEST_LOG_LEVEL));
      const p: Provider = await createProvider(providerModule, 'proxmox-test', config(), {
        logger,
        tracer: spans.tracer,
      });
      const name = `proxy-it-${Date.now().toString(36)}`;
      const req = {
        name,
        namespace: 'default',
        uid: `it-${Date.now()}`,
        port: 3128,
        cloudInit: new TextEncoder().encode(`#cloud-config\n# ${sentinel}\n`),
        placement: { machineType: 'small', image: 'test' },
      };
      try {
        const id = await p.create(req);
        const vmid = parseId(id)?.vmid ?? 0;
        const range = (config().vmidRange ?? { min: 100_000, max: 199_999 }) as {
          min?: number;
          max?: number;
        };
        expect(vmid).toBeGreaterThanOrEqual(range.min ?? 100_000);
        expect(vmid).toBeLessThanOrEqual(range.max ?? 199_999);
        expect(await p.create(req)).toBe(id);
        const deadline = Date.now() + timeoutMs / 2;
        let inst = await p.get(id);
        while (inst.state !== 'Running' && Date.now() < deadline) {
          await new Promise((r) => setTimeout(r, 5000));
          inst = await p.get(id);
        }
        expect(inst.state).toBe('Running');
        expect(inst.ip).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
        expect(inst.uid).toBe(req.uid);
        expect((await p.listByTag()).map((i) => i.id)).toContain(id);
        if (env.PROXMOX_TEST_KEEP === '1') return;
        await p.delete(id);
        expect(isNotFound(await p.get(id).catch((e: unknown) => e))).toBe(true);
        await p.delete(id);
        const raw = new HttpProxmoxApi({
          url: env.PROXMOX_TEST_URL as string,
          tokenFile: env.PROXMOX_TEST_TOKEN_FILE as string,
          caFile: env.PROXMOX_TEST_CA_FILE || undefined,
          insecureSkipTLSVerify:
            env.PROXMOX_TEST_INSECURE === '1' || env.PROXMOX_TEST_INSECURE === 'true',
          requestTimeoutMs: 30_000,
        });
        try {
          expect((await raw.clusterResources()).filter((e) => e.name === name)).toEqual([]);
        } finally {
          await raw.close();
        }
        expect(spans.text()).not.toContain(sentinel);
        expect(logs.text()).not.toContain(sentinel);
        expect(logs.text()).not.toContain(
          readFileSync(config().tokenFile as string, 'utf8').trim(),
        );
        const create = spans.spans().find((s) => s.name === 'provider.create');
        expect(
          spans
            .spans()
            .some(
              (s) =>
                s.name.startsWith('HTTP ') &&
                s.parentSpanContext?.spanId === create?.spanContext().spanId,
            ),
        ).toBe(true);
      } catch (err) {
        console.error('lifecycle failed:', errorClassOf(err), (err as Error).message);
        throw err;
      } finally {
        await p.close?.();
      }
    },
    timeoutMs,
  );
});
