/**
 * The production adapter: the seam over `@proxy-op/libvirt-rpc`, and the
 * transport that reaches a host's libvirtd over SSH.
 *
 * @module
 */
import { connect, type Dialer, type LibvirtClient, MetadataType } from '@proxy-op/libvirt-rpc';
import { sshDialer } from '@proxy-op/libvirt-rpc/ssh';
import type { DialTarget, LibvirtConnection, LibvirtSeam, Transport } from './seam.js';

/**
 * The seam over one open `LibvirtClient` (of `@proxy-op/libvirt-rpc`): every call passes its
 * signal on, so a cancelled call is abandoned by itself and the
 * connection carries on (libvirt-rpc's `drop` policy).
 */
export function clientSeam(c: LibvirtClient): LibvirtSeam {
  return {
    connectGetLibVersion: (_a, signal) => c.connectGetLibVersion({ signal }),
    connectGetHostname: (_a, signal) => c.connectGetHostname({ signal }),
    connectListAllDomains: (a, signal) => c.connectListAllDomains(a.flags, { signal }),
    domainLookupByName: (a, signal) => c.domainLookupByName(a.name, { signal }),
    domainDefineXml: (a, signal) => c.domainDefineXml(a.xml, { signal }),
    domainCreate: (a, signal) => c.domainCreate(a.dom, { signal }),
    domainDestroy: (a, signal) => c.domainDestroy(a.dom, { signal }),
    domainUndefineFlags: (a, signal) => c.domainUndefineFlags(a.dom, a.flags, { signal }),
    domainGetState: (a, signal) => c.domainGetState(a.dom, 0, { signal }),
    domainGetMetadata: (a, signal) =>
      c.domainGetMetadata(a.dom, MetadataType.ELEMENT, a.uri, 0, { signal }),
    domainInterfaceAddresses: (a, signal) =>
      c.domainInterfaceAddresses(a.dom, a.source, 0, { signal }),
    domainQemuAgentCommand: async (a, signal) =>
      (await c.domainQemuAgentCommand(a.dom, a.command, a.timeoutSec, 0, { signal })) ?? '',
    storagePoolLookupByName: (a, signal) => c.storagePoolLookupByName(a.name, { signal }),
    storagePoolGetInfo: (a, signal) => c.storagePoolGetInfo(a.pool, { signal }),
    storagePoolRefresh: (a, signal) => c.storagePoolRefresh(a.pool, 0, { signal }),
    storagePoolListAllVolumes: (a, signal) => c.storagePoolListAllVolumes(a.pool, 0, { signal }),
    storageVolLookupByName: (a, signal) => c.storageVolLookupByName(a.pool, a.name, { signal }),
    storageVolCreateXml: (a, signal) => c.storageVolCreateXml(a.pool, a.xml, 0, { signal }),
    storageVolGetPath: (a, signal) => c.storageVolGetPath(a.vol, { signal }),
    storageVolGetInfo: (a, signal) => c.storageVolGetInfo(a.vol, { signal }),
    storageVolGetXmlDesc: (a, signal) => c.storageVolGetXmlDesc(a.vol, 0, { signal }),
    storageVolDelete: (a, signal) => c.storageVolDelete(a.vol, 0, { signal }),
    storageVolDownload: async (a, signal) => {
      const body = await c.storageVolDownload(a.vol, {
        offset: a.offset,
        length: a.length,
        signal,
      });
      const chunks: Buffer[] = [];
      for await (const chunk of body) chunks.push(chunk as Buffer);
      return Buffer.concat(chunks);
    },
    storageVolUpload: (a, signal) =>
      c.storageVolUpload(a.vol, a.source, { length: a.length, signal }),
  };
}

/** A {@link LibvirtConnection} over an open client. */
export function clientConnection(c: LibvirtClient): LibvirtConnection {
  let open = true;
  const closed = c.closed.then(
    (reason) => {
      open = false;
      return reason;
    },
    (err: unknown) => {
      open = false;
      return err;
    },
  );
  return {
    seam: clientSeam(c),
    closed,
    isOpen: () => open && c.rpc.isOpen,
    close: async () => {
      open = false;
      await c.close();
    },
  };
}

/** Options of {@link sshTransport}. */
export interface SshTransportOptions {
  /** SSH keepalive interval (`keepalive@openssh.com`), 15 s by default. */
  readonly sshKeepaliveMs?: number | undefined;
  /**
   * Dials the SSH connection; `sshDialer` from `@proxy-op/libvirt-rpc/ssh`
   * by default. Tests wrap it to cut or count connections.
   */
  readonly dialer?: ((target: DialTarget) => Dialer) | undefined;
}

/**
 * The production transport: SSH with the target's key and host-key check,
 * a `direct-streamlocal` channel to libvirtd's socket, `CONNECT_OPEN` of
 * the target's URI, libvirt keepalive (every 5 s, dropped after 5 silent
 * intervals) on top of SSH keepalive (every 15 s).
 */
export function sshTransport(opts: SshTransportOptions = {}): Transport {
  const dialerFor =
    opts.dialer ??
    ((t: DialTarget): Dialer =>
      sshDialer({
        host: t.address,
        port: t.port,
        username: t.user,
        privateKey: t.privateKey,
        hostKey:
          'insecureIgnoreHostKey' in t.hostKey
            ? { insecureIgnoreHostKey: true }
            : { knownHosts: t.hostKey.knownHosts },
        socketPath: t.socket,
        keepaliveIntervalMs: opts.sshKeepaliveMs ?? 15_000,
      }));
  return {
    async open(target, signal) {
      const client = await connect({ dialer: dialerFor(target), uri: target.uri, signal });
      return clientConnection(client);
    },
  };
}
