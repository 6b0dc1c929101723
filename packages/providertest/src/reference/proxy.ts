/**
 * The reference backend's simulated proxy: how a running VM's proxy
 * answers a client's request, from what the VM record holds: its
 * destination policy (`@proxy-op/egress`, refusing this host and private
 * networks by default, as the real proxies do) and its password files.
 *
 * @module
 */
import { compileEgressPolicy, type EgressPolicy, type RefusalRule } from '@proxy-op/egress';
import { parsePasswordFile, verifyPassword } from '@proxy-op/htpasswd';

/**
 * What the simulated proxy sees of a VM: whether it runs, and the password
 * files (a backend's `VmRecord` is one).
 */
export interface ProxiedVm {
  /** The VM's status; the proxy answers only while it is `running`. */
  readonly status: string;
  /** The VM's address: its own, which its proxy refuses as a destination. */
  readonly ip?: string | undefined;
  /** The proxy's destination policy; its defaults when unset. */
  readonly egress?: EgressPolicy | undefined;
  /** The password file in the VM's filesystem; without one the proxy serves its sources alone. */
  readonly passwordFile?: Uint8Array | undefined;
  /** The password file the proxy had loaded before `passwordFile` was last written. */
  readonly proxyFile?: Uint8Array | undefined;
  /** When (ms since the epoch) the proxy loads `passwordFile` again, after it was written. */
  readonly proxyReloadAt?: number | undefined;
}

/**
 * The password file the proxy of a running `vm` has loaded at `now` (ms
 * since the epoch): the one it had before the VM's file was last written
 * until `proxyReloadAt` has come, the VM's current file after it.
 */
export function loadedFile(vm: ProxiedVm, now: number): Uint8Array | undefined {
  const reloaded = vm.proxyReloadAt === undefined || now >= vm.proxyReloadAt;
  return reloaded ? vm.passwordFile : vm.proxyFile;
}

/**
 * Whether the proxy of `vm` lets `credential` in at `now`: never while the
 * VM is missing or does not run; otherwise by the file it has loaded
 * ({@link loadedFile}). Without one the proxy serves its sources alone and
 * lets anyone in; with one, a user of the file with the right password.
 */
export function proxyLetsIn(
  vm: ProxiedVm | undefined,
  credential: { readonly username: string; readonly password: string },
  now: number,
): boolean {
  if (vm === undefined || vm.status !== 'running') return false;
  const file = loadedFile(vm, now);
  if (file === undefined) return true;
  const hash = parsePasswordFile(new TextDecoder().decode(file)).get(credential.username);
  return hash !== undefined && verifyPassword(credential.password, hash);
}

/**
 * The rule by which the proxy of `vm` refuses a plain request to
 * `destination` (`host:port`), or undefined when it would go there: the
 * policy of `@proxy-op/egress` applied to the host as given (a name is not
 * resolved) and, for an address, to the address.
 */
export function destinationRefusal(vm: ProxiedVm, destination: string): RefusalRule | undefined {
  const url = new URL(`http://${destination}`);
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const port = url.port === '' ? 80 : Number(url.port);
  const policy = compileEgressPolicy(vm.egress, {
    ownAddresses: vm.ip === undefined ? [] : [vm.ip],
  });
  const refused = policy.checkHost(host, port, 'http');
  if (refused !== undefined) return refused;
  const address = policy.literalAddress(host);
  return address === undefined ? undefined : policy.checkAddress(address, port, 'http', host);
}

/**
 * What the proxy of `vm` answers at `now` to a plain request for
 * `destination` (`host:port`) carrying `credential`, in the order the real
 * proxies judge it (the forward proxy, and Squid's rendered `http_access`
 * rules): nothing (undefined) while the VM is missing or does not run; 407
 * when it does not let the credential in ({@link proxyLetsIn}); 403 when
 * its destination policy refuses the destination
 * ({@link destinationRefusal}); else 200.
 */
export function proxyAnswer(
  vm: ProxiedVm | undefined,
  credential: { readonly username: string; readonly password: string },
  destination: string,
  now: number,
): 200 | 403 | 407 | undefined {
  if (vm === undefined || vm.status !== 'running') return undefined;
  if (!proxyLetsIn(vm, credential, now)) return 407;
  return destinationRefusal(vm, destination) === undefined ? 200 : 403;
}
