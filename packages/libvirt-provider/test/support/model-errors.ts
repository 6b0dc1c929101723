// The errors the in-memory libvirt model raises: libvirt's codes, domains and
// texts as libvirtd 9 sends them (the seam contract checks them against one).
import { ErrorCode, ErrorDomain, LibvirtError } from '@proxy-op/libvirt-rpc';

/** libvirt's error, as the daemon would send it. */
export function libvirtError(code: number, domain: number, message: string): LibvirtError {
  return new LibvirtError({
    code,
    domain,
    level: 2,
    message,
    str1: undefined,
    str2: undefined,
    str3: undefined,
    int1: -1,
    int2: -1,
    dom: undefined,
    net: undefined,
  });
}

/** The errors the model raises, with the texts libvirtd 9 sends (captured in seam.real.test.ts). */
export const Err = {
  noDomainByName: (name: string) =>
    libvirtError(
      ErrorCode.ERR_NO_DOMAIN,
      ErrorDomain.FROM_QEMU,
      `Domain not found: no domain with matching name '${name}'`,
    ),
  noDomainByUuid: (uuid: string, name: string) =>
    libvirtError(
      ErrorCode.ERR_NO_DOMAIN,
      ErrorDomain.FROM_QEMU,
      `Domain not found: no domain with matching uuid '${uuid}' (${name})`,
    ),
  domainExists: (name: string, uuid: string) =>
    libvirtError(
      ErrorCode.ERR_OPERATION_FAILED,
      ErrorDomain.FROM_DOMAIN,
      `operation failed: domain '${name}' already exists with uuid ${uuid}`,
    ),
  notRunning: () =>
    libvirtError(
      ErrorCode.ERR_OPERATION_INVALID,
      ErrorDomain.FROM_DOMAIN,
      'Requested operation is not valid: domain is not running',
    ),
  alreadyRunning: () =>
    libvirtError(
      ErrorCode.ERR_OPERATION_INVALID,
      ErrorDomain.FROM_QEMU,
      'Requested operation is not valid: domain is already running',
    ),
  noMetadata: () =>
    libvirtError(
      ErrorCode.ERR_NO_DOMAIN_METADATA,
      ErrorDomain.FROM_DOMAIN,
      'metadata not found: Requested metadata element is not present',
    ),
  agentNotConnected: () =>
    libvirtError(
      ErrorCode.ERR_AGENT_UNRESPONSIVE,
      ErrorDomain.FROM_QEMU,
      'Guest agent is not responding: QEMU guest agent is not connected',
    ),
  arpUnreadable: () =>
    libvirtError(
      ErrorCode.ERR_INTERNAL_ERROR,
      ErrorDomain.FROM_NONE,
      'internal error: wrong nlmsg len',
    ),
  xml: (detail: string) =>
    libvirtError(35, ErrorDomain.FROM_DOMAIN, `(domain_definition):1: ${detail}`),
  noPool: (name: string) =>
    libvirtError(
      ErrorCode.ERR_NO_STORAGE_POOL,
      ErrorDomain.FROM_STORAGE,
      `Storage pool not found: no storage pool with matching name '${name}'`,
    ),
  poolInactive: (name: string) =>
    libvirtError(
      ErrorCode.ERR_OPERATION_INVALID,
      ErrorDomain.FROM_STORAGE,
      `Requested operation is not valid: storage pool '${name}' is not active`,
    ),
  noVol: (name: string) =>
    libvirtError(
      ErrorCode.ERR_NO_STORAGE_VOL,
      ErrorDomain.FROM_STORAGE,
      `Storage volume not found: no storage vol with matching name '${name}'`,
    ),
  volExists: (name: string) =>
    libvirtError(
      ErrorCode.ERR_STORAGE_VOL_EXIST,
      ErrorDomain.FROM_STORAGE,
      `storage volume '${name}' exists already`,
    ),
  /** A volume libvirtd lists but whose file its build (qemu-img) has not made yet, read. */
  noVolByPath: (path: string) =>
    libvirtError(
      ErrorCode.ERR_NO_STORAGE_VOL,
      ErrorDomain.FROM_STORAGE,
      `Storage volume not found: no storage vol with matching path '${path}'`,
    ),
  stillAllocating: (name: string) =>
    libvirtError(
      ErrorCode.ERR_OPERATION_INVALID,
      ErrorDomain.FROM_STORAGE,
      `Requested operation is not valid: volume '${name}' is still being allocated.`,
    ),
  volNameSlash: (name: string) =>
    libvirtError(
      ErrorCode.ERR_OPERATION_INVALID,
      ErrorDomain.FROM_STORAGE,
      `Requested operation is not valid: volume name '${name}' cannot contain '/'`,
    ),
  backingMissing: (path: string) =>
    libvirtError(
      ErrorCode.ERR_SYSTEM_ERROR,
      ErrorDomain.FROM_STORAGE,
      `inaccessible backing store volume ${path}: No such file or directory`,
    ),
  accessDenied: () =>
    libvirtError(ErrorCode.ERR_ACCESS_DENIED, 6, 'access denied: unable to open the connection'),
};
