// Peer: a real Proxmox VE host, only when the PROXMOX_TEST_* variables are set.
import { readFileSync } from 'node:fs';
import { createProvider, errorClassOf, isNotFound, type Provider } from '@proxy-op/contract';
import { createLogSink, createSpanRecorder } from '@proxy-op/providertest';
import { consoleLogger, durationFromEnv, teeLogger } from '@proxy-op/testkit';
import { Agent, fetch } from 'undici';
import { describe, expect, it } from 'vitest';
import { parseId } from '../src/id.js';
import { parseDescription } from '../src/mark.js';
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
/** PROXMOX_TEST_TIMEOUT: `15m`, `90s` or plain seconds. */
const timeoutMs = durationFromEnv(env.PROXMOX_TEST_TIMEOUT, 20 * 60_000);

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

/** A GET of the PVE API with the test's token, for what the seam has no method for (storage content). */
async function pveGet(path: string): Promise<unknown> {
  const token = readFileSync(env.PROXMOX_TEST_TOKEN_FILE as string, 'utf8').trim();
  const insecure = env.PROXMOX_TEST_INSECURE === '1' || env.PROXMOX_TEST_INSECURE === 'true';
  const agent = new Agent({
    connect: {
      rejectUnauthorized: !insecure,
      ...(env.PROXMOX_TEST_CA_FILE ? { ca: readFileSync(env.PROXMOX_TEST_CA_FILE, 'utf8') } : {}),
    },
  });
  try {
    const res = await fetch(new URL(`/api2/json${path}`, env.PROXMOX_TEST_URL), {
      headers: { authorization: `PVEAPIToken=${token}` },
      dispatcher: agent,
    });
    if (!res.ok) throw new Error(`GET ${path}: ${res.status} ${res.statusText}`);
    return ((await res.json()) as { data: unknown }).data;
  } finally {
    await agent.close();
  }
}

/** The host's VMs with `name`, from the listing. */
async function vmsNamed(name: string): Promise<{ vmid: number; name?: string }[]> {
  const list = (await pveGet('/cluster/resources?type=vm')) as { vmid: number; name?: string }[];
  return list.filter((e) => e.name === name);
}

describe.skipIf(missing.length > 0)('a real Proxmox VE host', () => {
  it('Proxmox: Check reports the node ready on a real host', async () => {
    const p = await createProvider(providerModule, 'proxmox-test', config(), {});
    try {
      const [r] = await p.check!();
      expect(r?.reason, r?.message).toBe('Reachable');
      expect(r?.details).toMatchObject({
        isoStorage: env.PROXMOX_TEST_ISO_STORAGE,
        templates: '1/1',
        tokenID: expect.stringMatching(/^[^=]+@[^=]+![^=]+$/),
      });
      expect(r?.details.pveVersion).toBeTruthy();
      expect(r?.details.kernel).toBeTruthy();
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
      // PROXMOX_TEST_LOG_LEVEL (`debug`, `trace`) prints the provider's lines at that level and above.
      const logger = teeLogger(logs.logger, consoleLogger(env.PROXMOX_TEST_LOG_LEVEL));
      const p: Provider = await createProvider(providerModule, 'proxmox-test', config(), {
        logger,
        tracer: spans.tracer,
      });
      // New returns without a request: every API call logs one line.
      expect(logs.lines.filter((l) => l.msg === 'proxmox call')).toEqual([]);
      const name = `proxy-it-${Date.now().toString(36)}`;
      const req = {
        name,
        namespace: 'default',
        uid: `it-${Date.now()}`,
        port: 3128,
        cloudInit: new TextEncoder().encode(`#cloud-config\n# ${sentinel}\n`),
        placement: { machineType: 'small', image: 'test' },
      };
      const node = env.PROXMOX_TEST_NODE as string;
      const isoStorage = env.PROXMOX_TEST_ISO_STORAGE as string;
      try {
        const before = Date.now();
        const id = await p.create(req);
        const after = Date.now();
        const vmid = parseId(id)?.vmid ?? 0;
        expect(id).toBe(`vms/${vmid}/${name}`);
        const range = (config().vmidRange ?? { min: 100_000, max: 199_999 }) as {
          min?: number;
          max?: number;
        };
        expect(vmid).toBeGreaterThanOrEqual(range.min ?? 100_000);
        expect(vmid).toBeLessThanOrEqual(range.max ?? 199_999);
        // A second Create returns the same ID and makes no VM.
        const count = ((await pveGet('/cluster/resources?type=vm')) as unknown[]).length;
        expect(await p.create(req)).toBe(id);
        expect(((await pveGet('/cluster/resources?type=vm')) as unknown[]).length).toBe(count);
        const deadline = Date.now() + timeoutMs / 2;
        let inst = await p.get(id);
        while (inst.state !== 'Running' && Date.now() < deadline) {
          await new Promise((r) => setTimeout(r, 5000));
          inst = await p.get(id);
        }
        expect(inst.state).toBe('Running');
        expect(inst.ip).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
        // UID and CreatedAt as Create wrote them in the description.
        expect(inst.uid).toBe(req.uid);
        const written = parseDescription(
          ((await pveGet(`/nodes/${node}/qemu/${vmid}/config`)) as { description?: string })
            .description,
        );
        expect(written?.uid).toBe(req.uid);
        expect(inst.createdAt.toISOString()).toBe(written?.createdAt.toISOString());
        expect(inst.createdAt.getTime()).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000);
        expect(inst.createdAt.getTime()).toBeLessThanOrEqual(after);
        expect((await p.listByTag()).map((i) => i.id)).toContain(id);
        if (env.PROXMOX_TEST_KEEP === '1') return;
        await p.delete(id);
        expect(isNotFound(await p.get(id).catch((e: unknown) => e))).toBe(true);
        await p.delete(id);
        // Nothing left: no VM with the name, no seed, no disk of the VMID.
        expect(await vmsNamed(name)).toEqual([]);
        const isos = (await pveGet(`/nodes/${node}/storage/${isoStorage}/content?content=iso`)) as {
          volid: string;
        }[];
        expect(isos.map((v) => v.volid)).not.toContain(`${isoStorage}:iso/${name}-seed.iso`);
        const storages = (await pveGet(`/nodes/${node}/storage?content=images&enabled=1`)) as {
          storage: string;
        }[];
        for (const { storage } of storages) {
          const disks = await pveGet(`/nodes/${node}/storage/${storage}/content?vmid=${vmid}`);
          expect(disks, `disks of ${vmid} on ${storage}`).toEqual([]);
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
        for (const s of spans.spans()) {
          expect(JSON.stringify(s.attributes), s.name).not.toContain(sentinel);
        }
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
