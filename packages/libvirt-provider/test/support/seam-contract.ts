// The seam contract: what the engine relies on libvirt to answer, call by
// call. seam.model.test.ts runs it against the in-memory model and
// seam.real.test.ts against the production adapter on a real libvirtd, so
// the model cannot drift from libvirt (codes, messages, states, metadata,
// volume behaviour).
import {
  DomainState,
  ErrorCode,
  InterfaceAddressSource,
  isLibvirtError,
  LibvirtError,
} from '@proxy-op/libvirt-rpc';
import type * as Vitest from 'vitest';
import { markElement } from '../../src/flavour.js';
import type { LibvirtSeam, StorageVol } from '../../src/seam.js';
import { domainXml, overlayXml, volumeXml } from '../../src/xml.js';
import { describeStorageContract } from './seam-contract-storage.js';

/** What a run of the contract needs from its backend. */
export interface SeamBackend {
  readonly seam: LibvirtSeam;
  /** A running dir pool to make volumes in. */
  readonly pool: string;
  /** A qcow2 image (48 MiB virtual) to upload. */
  readonly image: Buffer;
  /** The domain type the host can run (`qemu` without KVM). */
  readonly domainType: 'kvm' | 'qemu';
  /** Stops and starts the pool behind the seam's back. */
  setPoolActive(active: boolean): Promise<void>;
}

const NS = markElement({
  uri: 'https://proxy-op.dev/xmlns/seam-contract/1',
  prefix: 'sc',
  element: 'instance',
});
export const SIGNAL: AbortSignal = new AbortController().signal;

export async function failure(p: Promise<unknown>): Promise<LibvirtError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!LibvirtError.isInstance(err)) throw new Error(`expected a LibvirtError, got ${String(err)}`);
  return err;
}

export function describeSeamContract(
  vitest: typeof Vitest,
  title: string,
  backend: () => SeamBackend,
): void {
  const { describe, expect, it } = vitest;
  let n = 0;
  const unique = (what: string) => `sc-${what}-${process.pid}-${++n}`;
  // A test that starts and destroys a real QEMU domain: 2 s on an idle machine, 6 s beside
  // four busy loops, and past 30 s in CI beside the end-to-end guests (a destroy waits for
  // QEMU to act on SIGTERM). It gets the engine's own start budget.
  const DOMAIN_MS = 120_000;

  describe(title, () => {
    const seam = () => backend().seam;
    const poolHandle = () => seam().storagePoolLookupByName({ name: backend().pool }, SIGNAL);

    /** A domain XML as the engine writes it, with volumes that exist. */
    async function defineable(
      name: string,
      mark: string,
    ): Promise<{ xml: string; vols: StorageVol[] }> {
      const s = seam();
      const pool = await poolHandle();
      const base = await s.storageVolCreateXml(
        { pool, xml: volumeXml(`${name}-base.qcow2`, backend().image.length) },
        SIGNAL,
      );
      await s.storageVolUpload(
        { vol: base, source: [backend().image], length: backend().image.length },
        SIGNAL,
      );
      await s.storagePoolRefresh({ pool }, SIGNAL);
      const basePath = await s.storageVolGetPath({ vol: base }, SIGNAL);
      const overlay = await s.storageVolCreateXml(
        { pool, xml: overlayXml(`${name}.qcow2`, 64 * 1024 ** 2, basePath, 'qcow2') },
        SIGNAL,
      );
      const seed = await s.storageVolCreateXml(
        { pool, xml: volumeXml(`${name}-seed.iso`, 69_632) },
        SIGNAL,
      );
      const xml = domainXml({
        name,
        domainType: backend().domainType,
        vcpus: 1,
        memoryMiB: 64,
        firmware: 'bios',
        metadata: mark,
        overlayPath: await s.storageVolGetPath({ vol: overlay }, SIGNAL),
        seedPath: await s.storageVolGetPath({ vol: seed }, SIGNAL),
        consoleLog: true,
      });
      return { xml, vols: [seed, overlay, base] };
    }

    async function removeAll(vols: StorageVol[]): Promise<void> {
      for (const vol of vols)
        await seam()
          .storageVolDelete({ vol }, SIGNAL)
          .catch(() => {});
    }

    it('a missing domain is ERR_NO_DOMAIN naming it', async () => {
      const err = await failure(seam().domainLookupByName({ name: 'sc-no-such-domain' }, SIGNAL));
      expect(err.code).toBe(ErrorCode.ERR_NO_DOMAIN);
      expect(err.message).toBe(
        "Domain not found: no domain with matching name 'sc-no-such-domain'",
      );
    });

    it('a defined domain is shut off (reason unknown), listed, and reads its mark back', async () => {
      const s = seam();
      const name = unique('define');
      const mark = {
        uid: `u&<"'>-${name}`,
        createdAt: new Date('2026-01-02T03:04:05Z'),
        installation: 'inst-a',
      };
      const { xml, vols } = await defineable(name, NS.format(mark));
      try {
        const dom = await s.domainDefineXml({ xml }, SIGNAL);
        expect(dom.name).toBe(name);
        expect(dom.id).toBe(-1);
        expect(await s.domainGetState({ dom }, SIGNAL)).toEqual({
          state: DomainState.SHUTOFF,
          reason: 0,
        });
        expect((await s.connectListAllDomains({ flags: 0 }, SIGNAL)).map((d) => d.name)).toContain(
          name,
        );
        const element = await s.domainGetMetadata({ dom, uri: NS.uri }, SIGNAL);
        expect(element.startsWith('<instance ')).toBe(true);
        expect(NS.parse(element)).toEqual(mark);
        const none = await failure(
          s.domainGetMetadata({ dom, uri: 'https://proxy-op.dev/xmlns/other' }, SIGNAL),
        );
        expect([none.code, none.message]).toEqual([
          ErrorCode.ERR_NO_DOMAIN_METADATA,
          'metadata not found: Requested metadata element is not present',
        ]);
        const again = await failure(s.domainDefineXml({ xml }, SIGNAL));
        expect(again.code).toBe(ErrorCode.ERR_OPERATION_FAILED);
        expect(again.message).toMatch(
          new RegExp(`^operation failed: domain '${name}' already exists with uuid [0-9a-f-]{36}$`),
        );
        const bad = await failure(s.domainDefineXml({ xml: '<domain' }, SIGNAL));
        expect(bad.code).toBe(35);
        await s.domainUndefineFlags({ dom, flags: 7 }, SIGNAL);
        const gone = await failure(s.domainGetState({ dom }, SIGNAL));
        expect(gone.code).toBe(ErrorCode.ERR_NO_DOMAIN);
        expect(gone.message).toMatch(
          new RegExp(
            `^Domain not found: no domain with matching uuid '[0-9a-f-]{36}' \\(${name}\\)$`,
          ),
        );
      } finally {
        await removeAll(vols);
      }
    });

    it('returns a metadata element with child elements without prefixes, one child a line', async () => {
      const s = seam();
      const name = unique('nested');
      const uri = 'https://proxy-op.dev/xmlns/seam-contract-nested/1';
      const nested = [
        `<scn:instance xmlns:scn="${uri}" version="1">`,
        '<scn:managed>true</scn:managed>',
        `<scn:uid>u&amp;&lt;1&#39;"&gt;</scn:uid>`,
        '<scn:createdAt>2026-01-02T03:04:05+02:00</scn:createdAt>',
        '<scn:empty/>',
        '</scn:instance>',
      ].join('');
      const { xml, vols } = await defineable(
        name,
        `${NS.format({ uid: 'u3', createdAt: new Date(), installation: 'default' })}${nested}`,
      );
      try {
        const dom = await s.domainDefineXml({ xml }, SIGNAL);
        expect(await s.domainGetMetadata({ dom, uri }, SIGNAL)).toBe(
          [
            '<instance version="1">',
            '  <managed>true</managed>',
            `  <uid>u&amp;&lt;1'"&gt;</uid>`,
            '  <createdAt>2026-01-02T03:04:05+02:00</createdAt>',
            '  <empty/>',
            '</instance>',
          ].join('\n'),
        );
        expect(NS.parse(await s.domainGetMetadata({ dom, uri: NS.uri }, SIGNAL))?.uid).toBe('u3');
        await s.domainUndefineFlags({ dom, flags: 7 }, SIGNAL);
      } finally {
        await removeAll(vols);
      }
    });

    it(
      'start, addresses without an agent, destroy and undefine answer as the engine expects',
      async () => {
        const s = seam();
        const name = unique('life');
        const { xml, vols } = await defineable(
          name,
          NS.format({ uid: 'u1', createdAt: new Date(), installation: 'default' }),
        );
        try {
          const dom = await s.domainDefineXml({ xml }, SIGNAL);
          const notRunning = await failure(s.domainDestroy({ dom }, SIGNAL));
          expect([notRunning.code, notRunning.message]).toEqual([
            ErrorCode.ERR_OPERATION_INVALID,
            'Requested operation is not valid: domain is not running',
          ]);
          const offAgent = await failure(
            s.domainQemuAgentCommand(
              { dom, command: '{"execute":"guest-ping"}', timeoutSec: -1 },
              SIGNAL,
            ),
          );
          expect([offAgent.code, offAgent.message]).toEqual([
            ErrorCode.ERR_OPERATION_INVALID,
            'Requested operation is not valid: domain is not running',
          ]);
          for (const source of [
            InterfaceAddressSource.AGENT,
            InterfaceAddressSource.LEASE,
            InterfaceAddressSource.ARP,
          ]) {
            const off = await failure(s.domainInterfaceAddresses({ dom, source }, SIGNAL));
            expect([off.code, off.message]).toEqual([
              ErrorCode.ERR_OPERATION_INVALID,
              'Requested operation is not valid: domain is not running',
            ]);
          }
          await s.domainCreate({ dom }, SIGNAL);
          expect(await s.domainGetState({ dom }, SIGNAL)).toEqual({
            state: DomainState.RUNNING,
            reason: 1,
          });
          const twice = await failure(s.domainCreate({ dom }, SIGNAL));
          expect([twice.code, twice.message]).toEqual([
            ErrorCode.ERR_OPERATION_INVALID,
            'Requested operation is not valid: domain is already running',
          ]);
          const agent = await failure(
            s.domainInterfaceAddresses({ dom, source: InterfaceAddressSource.AGENT }, SIGNAL),
          );
          expect([agent.code, agent.message]).toEqual([
            ErrorCode.ERR_AGENT_UNRESPONSIVE,
            'Guest agent is not responding: QEMU guest agent is not connected',
          ]);
          // A guest whose agent never started (updateAuth's case while it boots): the same refusal.
          const ping = JSON.stringify({ execute: 'guest-ping', arguments: {} });
          const command = await failure(
            s.domainQemuAgentCommand({ dom, command: ping, timeoutSec: -1 }, SIGNAL),
          );
          expect([command.code, command.message]).toEqual([
            ErrorCode.ERR_AGENT_UNRESPONSIVE,
            'Guest agent is not responding: QEMU guest agent is not connected',
          ]);
          expect(
            await s.domainInterfaceAddresses({ dom, source: InterfaceAddressSource.LEASE }, SIGNAL),
          ).toEqual([]);
          const arp = await failure(
            s.domainInterfaceAddresses({ dom, source: InterfaceAddressSource.ARP }, SIGNAL),
          );
          expect([arp.code, arp.message]).toEqual([
            ErrorCode.ERR_INTERNAL_ERROR,
            'internal error: wrong nlmsg len',
          ]);
          const running = await s.domainLookupByName({ name }, SIGNAL);
          expect(running.id).toBeGreaterThan(0);
          await s.domainDestroy({ dom }, SIGNAL);
          expect(await s.domainGetState({ dom }, SIGNAL)).toEqual({
            state: DomainState.SHUTOFF,
            reason: 2,
          });
          await s.domainUndefineFlags({ dom, flags: 7 }, SIGNAL);
          expect((await failure(s.domainLookupByName({ name }, SIGNAL))).code).toBe(
            ErrorCode.ERR_NO_DOMAIN,
          );
          expect((await failure(s.domainUndefineFlags({ dom, flags: 7 }, SIGNAL))).code).toBe(
            ErrorCode.ERR_NO_DOMAIN,
          );
          expect((await failure(s.domainDestroy({ dom }, SIGNAL))).code).toBe(
            ErrorCode.ERR_NO_DOMAIN,
          );
          expect((await failure(s.domainGetMetadata({ dom, uri: NS.uri }, SIGNAL))).code).toBe(
            ErrorCode.ERR_NO_DOMAIN,
          );
        } finally {
          await removeAll(vols);
        }
      },
      DOMAIN_MS,
    );

    it(
      'a running domain undefined runs on, transient, until destroyed',
      async () => {
        const s = seam();
        const name = unique('transient');
        const { xml, vols } = await defineable(
          name,
          NS.format({ uid: 'u2', createdAt: new Date(), installation: 'default' }),
        );
        try {
          const dom = await s.domainDefineXml({ xml }, SIGNAL);
          await s.domainCreate({ dom }, SIGNAL);
          await s.domainUndefineFlags({ dom, flags: 7 }, SIGNAL);
          expect(await s.domainGetState({ dom }, SIGNAL)).toEqual({
            state: DomainState.RUNNING,
            reason: 1,
          });
          await s.domainDestroy({ dom }, SIGNAL);
          const gone = await failure(s.domainLookupByName({ name }, SIGNAL));
          expect(gone.message).toBe(`Domain not found: no domain with matching name '${name}'`);
        } finally {
          await removeAll(vols);
        }
      },
      DOMAIN_MS,
    );

    describeStorageContract(vitest, backend, unique);

    it('a cancelled call ends only itself', async () => {
      const s = seam();
      const ac = new AbortController();
      ac.abort(new Error('gave up'));
      const err = await s.connectGetHostname({}, ac.signal).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isLibvirtError(err)).toBe(false);
      expect((err as { code?: string }).code).toBe('ERR_RPC_ABORTED');
      expect(typeof (await s.connectGetLibVersion({}, SIGNAL))).toBe('number');
    });
  });
}
