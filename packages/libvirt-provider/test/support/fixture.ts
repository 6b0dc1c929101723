// A provider built on the engine over the in-memory libvirt model, with the
// conformance harness of @proxy-op/providertest over that model: what the
// engine's own suites and each libvirt provider's conformance run use.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type CreateRequest,
  createProvider,
  type Provider,
  type ProviderModule,
} from '@proxy-op/contract';
import { parsePasswordFile, verifyPassword } from '@proxy-op/forward-proxy';
import { type ImageServer, startImageServer } from '@proxy-op/libvirt-harness';
import { DomainState } from '@proxy-op/libvirt-rpc';
import type {
  BackendHarness,
  ConformanceDeps,
  ConformanceFixture,
  PlantedMark,
} from '@proxy-op/providertest';
import { plantedMarkPairs } from '@proxy-op/providertest';
import { SERVICE_PASSWORD_FILE } from '@proxy-op/squid-config';
import { sshKeyPair } from '@proxy-op/testkit';
import type { Budgets } from '../../src/budgets.js';
import type { LibvirtFlavour } from '../../src/flavour.js';
import { domainIds } from '../../src/id.js';
import { IMAGE_PREFIX, overlayName, seedName } from '../../src/runtime.js';
import { checkScenarios } from './check-scenarios.js';
import { CLASSIFY_CASES } from './classify-cases.js';
import { knownHostsLine, LibvirtModel, type ModelDomain, type ModelHost } from './model.js';
import { ModelConnection, metadataOf } from './model-connection.js';
import { qcow2Header } from './qcow2.js';

/** The per-call budget of the conformance runs (generous: a loaded 2-core machine is slow). */
export const CALL_BUDGET_MS = 3_000;

/** Budgets small enough for tests. */
export const FAST_BUDGETS: Partial<Budgets> = {
  dial: CALL_BUDGET_MS,
  call: CALL_BUDGET_MS,
  start: CALL_BUDGET_MS,
  image: 10_000,
  running: 2_000,
  poll: 5,
};

/** A fresh ed25519 private key in OpenSSH format. */
export function newPrivateKey(): string {
  return sshKeyPair().private;
}

export interface ModelFixtureOptions {
  /** Host names, in config order; `kvm-a` and `kvm-b` by default. */
  readonly hosts?: readonly string[];
  /** Config fields to add or override. */
  readonly config?: Record<string, unknown>;
  readonly budgets?: Partial<Budgets>;
  /** The provider's configured name. */
  readonly name?: string;
  /**
   * The metadata element as libvirt returns it (no prefix) for planted
   * mark pairs; by default the flavour's element with the pairs as
   * attributes.
   */
  readonly plantMark?: (pairs: Record<string, string>) => string;
}

export interface ModelFixture extends ConformanceFixture {
  readonly model: LibvirtModel;
  readonly images: ImageServer;
  readonly config: Record<string, unknown>;
  readonly dir: string;
  readonly keyFile: string;
  readonly knownHostsFile: string;
  /** The image served for the catalogue key `tiny`. */
  readonly imagePath: string;
  /** Builds another provider on the same model and files (a second process, a restart). */
  another(config?: Record<string, unknown>, deps?: ConformanceDeps): Promise<Provider>;
}

/** The host and name of a provider ID. */
export function idParts(id: string): { host: string; name: string } {
  const p = domainIds.parse(id);
  if (p === undefined) throw new Error(`not a libvirt provider ID: ${id}`);
  return p;
}

export async function createModelFixture(
  module: ProviderModule<unknown, never, unknown>,
  flavour: LibvirtFlavour,
  deps: ConformanceDeps,
  opts: ModelFixtureOptions = {},
): Promise<ModelFixture> {
  const names = opts.hosts ?? ['kvm-a', 'kvm-b'];
  const dir = mkdtempSync(join(tmpdir(), 'libvirt-fixture-'));
  const keyFile = join(dir, 'ssh-privatekey');
  const knownHostsFile = join(dir, 'known_hosts');
  let key = newPrivateKey();
  writeFileSync(keyFile, key, { mode: 0o600 });
  const model = new LibvirtModel();
  for (const name of names)
    model.addHost({ name, address: `${name}.model.test`, acceptedKey: key });
  const writeKnownHosts = () =>
    writeFileSync(knownHostsFile, [...model.hosts.values()].map(knownHostsLine).join(''));
  writeKnownHosts();
  const images = await startImageServer();
  const imagePath = '/tiny.qcow2';
  const sha256 = await images.serve(imagePath, qcow2Header());
  const config: Record<string, unknown> = {
    hosts: names.map((name) => ({
      name,
      address: `${name}.model.test`,
      user: 'proxyop',
      bridge: 'br0',
    })),
    sshKeyFile: keyFile,
    knownHostsFile,
    diskSizeGb: 1,
    images: { tiny: { url: images.url(imagePath), sha256 } },
    machineTypes: { small: { vcpus: 1, memoryMiB: 256 } },
    ...opts.config,
  };
  const build = (c: Record<string, unknown>, d: ConformanceDeps) =>
    createProvider(
      module as ProviderModule<unknown, Record<string, unknown>, unknown>,
      opts.name ?? `${flavour.type}-home`,
      c,
      {
        ...d,
        transport: model.transport(),
        budgets: { ...FAST_BUDGETS, ...opts.budgets },
      },
    );
  const provider = await build(config, deps);
  const stored = (element: string) => metadataOf(`<metadata>${element}</metadata>`);
  const plantMark =
    opts.plantMark ??
    ((pairs: Record<string, string>) => {
      const sample = stored(
        flavour.metadata.format({ uid: 'x', createdAt: new Date(0), installation: 'x' }),
      );
      const el = /^<([\w.-]+)/.exec(sample.get(flavour.metadata.uri) ?? '')?.[1] ?? 'instance';
      const attrs = Object.entries(pairs)
        .map(([k, v]) => ` ${k}="${v}"`)
        .join('');
      return `<${el}${attrs}/>`;
    });
  const host = (name: string): ModelHost => model.host(name);
  const domainOf = (id: string): ModelDomain => {
    const p = idParts(id);
    return model.domain(p.host, p.name);
  };
  const first = names[0] as string;
  const plantRunning = (name: string, element: string | undefined): string => {
    model.plantDomain(host(first), {
      name,
      metadata: element === undefined ? [] : [[flavour.metadata.uri, element]],
      state: DomainState.RUNNING,
      reason: 1,
      agentIp: '10.1.2.3',
    });
    return domainIds.format({ host: first, name });
  };
  const plantedElement = (mark: PlantedMark) => plantMark(plantedMarkPairs(mark));

  const harness: BackendHarness = {
    baseRequest: {
      namespace: 'default',
      port: 3128,
      placement: { zone: first, machineType: 'small', image: 'tiny' },
    },
    invalidPlacements: [
      {
        placement: { zone: first, machineType: 'huge', image: 'tiny' },
        field: 'placement.machineType',
      },
      { placement: { zone: first, image: 'tiny' }, field: 'placement.machineType' },
      {
        placement: { zone: first, machineType: 'small', image: 'windows' },
        field: 'placement.image',
      },
      { placement: { zone: 'mars', machineType: 'small', image: 'tiny' }, field: 'placement.zone' },
      ...(names.length > 1
        ? [{ placement: { machineType: 'small', image: 'tiny' }, field: 'placement.zone' }]
        : []),
    ],
    backendCalls: () => model.calls.length,
    instanceCount: async () => model.domains().length,
    secondaryCount: async () =>
      model.volumes().filter((v) => !v.name.startsWith(IMAGE_PREFIX)).length,
    setRunning: async (id, ip) => {
      const d = domainOf(id);
      d.state = DomainState.RUNNING;
      d.reason = 1;
      d.agentIp = ip;
    },
    setState: async (id, state) => {
      const d = domainOf(id);
      if (state === 'running') {
        d.state = DomainState.RUNNING;
        d.reason = 1;
      } else if (state === 'stopped') {
        d.state = DomainState.SHUTOFF;
        d.reason = 1;
        d.agentIp = undefined;
      } else {
        // A state number libvirt may add one day.
        d.state = 8;
        d.reason = 0;
      }
    },
    rewriteMark: async (id, mark) => {
      const d = domainOf(id);
      const old = flavour.metadata.parse(d.metadata.get(flavour.metadata.uri) ?? '');
      const next = stored(
        flavour.metadata.format({
          uid: mark.uid,
          createdAt: mark.createdAt,
          installation: old?.installation ?? 'default',
        }),
      );
      for (const [uri, el] of next) d.metadata.set(uri, el);
    },
    replaceInstance: async (id, mark) => {
      const p = idParts(id);
      host(p.host).domains.delete(p.name);
      model.plantDomain(host(p.host), {
        name: p.name,
        metadata: mark === undefined ? [] : [[flavour.metadata.uri, plantedElement(mark)]],
        state: DomainState.RUNNING,
        reason: 1,
        agentIp: '10.9.8.7',
      });
    },
    holdNextDelete: (id) => {
      const { name } = idParts(id);
      return model.holdNext(
        'domainUndefineFlags',
        (a) => (a.dom as { name?: string })?.name === name,
      );
    },
    plantNeverStarted: async (req: CreateRequest) => {
      const hostName = req.placement.zone ?? first;
      const h = host(hostName);
      const pool = h.pools.get('default');
      for (const v of [overlayName(req.name), seedName(req.name)]) {
        pool?.volumes.set(v, {
          name: v,
          path: `${pool.dir}/${v}`,
          format: 'raw',
          capacity: 4096,
          data: Buffer.alloc(0),
        });
      }
      const element = stored(
        flavour.metadata.format({
          uid: req.uid,
          createdAt: new Date(),
          installation: req.installation ?? 'default',
        }),
      );
      model.plantDomain(h, {
        name: req.name,
        metadata: [...element],
        state: DomainState.SHUTOFF,
        reason: 0,
      });
      return domainIds.format({ host: hostName, name: req.name });
    },
    plantUnmarked: async (name) => plantRunning(name, undefined),
    plantMarked: async (name, mark) => plantRunning(name, plantedElement(mark)),
    blockCalls: (skip) => model.blockCalls(skip),
    injectMalformed: () => model.malformNext(),
    failNextCreateLater: () => {
      model.crashNextStart = true;
    },
    exhaustCapacity: () => {
      for (const h of model.hosts.values()) {
        for (const p of h.pools.values()) {
          const used = [...p.volumes.values()].reduce(
            (n, v) => n + ModelConnection.allocation(v),
            0,
          );
          p.capacity = used + 1024 * 1024;
        }
      }
    },
    isolatePart: async (id) => {
      const h = host(idParts(id).host);
      h.reachable = false;
      model.dropConnections(h.name);
      return async () => {
        h.reachable = true;
      };
    },
    callBudgetMs: CALL_BUDGET_MS,
    classifyCases:
      flavour.profile.quota === 'absent'
        ? CLASSIFY_CASES.filter((c) => c.want !== 'QuotaExceeded')
        : CLASSIFY_CASES,
    classify: (op, err) => module.classify(op, err),
    checkTargets: names,
    delayTarget: (target, ms) => {
      host(target).delayMs = ms;
    },
    checkScenarios: checkScenarios(model, names, { keyFile, knownHostsFile }),
    credentialSentinel: key,
    rejectCredential: () => {
      // The admin revoked the key on every host and ended its sessions; sshd echoes what it refused.
      for (const h of model.hosts.values()) {
        h.acceptedKeys = new Set([newPrivateKey()]);
        h.echoRefusedKey = true;
      }
      model.dropConnections();
    },
    // The guest as the operator's default cloud-init leaves it: the agent up, the file there.
    deliverAuth: async (id, auth) => {
      const d = domainOf(id);
      d.agentIp ??= '10.1.2.3';
      d.guest.placePasswordFile(SERVICE_PASSWORD_FILE, auth.passwordFile);
    },
    // No Squid runs in the model: the answer basic_ncsa_auth would give for the guest's file
    // (Squid's credentialsttl is the vm-e2e suite's, on a real one).
    acceptsCredential: async (id, { username, password }) => {
      const text = domainOf(id).guest.text(SERVICE_PASSWORD_FILE, id);
      const hash = parsePasswordFile(text).get(username);
      return hash !== undefined && verifyPassword(password, hash);
    },
    authSettleMs: 1000,
    rotateCredential: () => {
      key = newPrivateKey();
      writeFileSync(keyFile, key, { mode: 0o600 });
      for (const h of model.hosts.values()) {
        h.acceptedKeys = new Set([key]);
        h.echoRefusedKey = false;
      }
    },
  };
  return {
    provider,
    harness,
    model,
    images,
    config,
    dir,
    keyFile,
    knownHostsFile,
    imagePath,
    another: (c = config, d = deps) => build(c, d),
    cleanup: async () => {
      await provider.close?.();
      await images.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export { CLASSIFY_CASES } from './classify-cases.js';
