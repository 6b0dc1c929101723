/**
 * The reference backend's simulated proxy: how a running VM's proxy
 * answers a client's Basic credential, from the password files the VM
 * record holds.
 *
 * @module
 */
import { parsePasswordFile, verifyPassword } from '@proxy-op/forward-proxy';

/**
 * What the simulated proxy sees of a VM: whether it runs, and the password
 * files (a backend's `VmRecord` is one).
 */
export interface ProxiedVm {
  /** The VM's status; the proxy answers only while it is `running`. */
  readonly status: string;
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
