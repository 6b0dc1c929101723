/**
 * The engine's backend failures, found as a `ProviderError`'s `cause`: a
 * dial, an image download, a metadata element that cannot be read. Each is
 * branded: `DialError.isInstance(err)` works across two installed copies
 * of this package.
 *
 * @module
 */
import { BackendError, type BackendErrorOptions } from '@proxy-op/contract';

/**
 * Where a dial failed: reading the key or known_hosts files
 * (`credentials`), the host key (`hostkey`), the login (`auth`), TCP or the
 * SSH handshake (`connect`), the channel to libvirtd's socket (`channel`),
 * the libvirt handshake (`libvirt`), or its budget (`timeout`).
 */
export type DialStage =
  | 'credentials'
  | 'hostkey'
  | 'auth'
  | 'connect'
  | 'channel'
  | 'libvirt'
  | 'timeout';

/** A dial that failed. The message says what to fix; it never holds key material. */
export class DialError extends BackendError {
  /** `@proxy-op/libvirt-provider.DialError`: the key of the class's brand. */
  static override readonly brand: string = '@proxy-op/libvirt-provider.DialError';
  /** `LIBVIRT_DIAL_<STAGE>`, for instance `LIBVIRT_DIAL_AUTH`. */
  readonly code: string;
  constructor(
    /** Where the dial failed. */
    readonly stage: DialStage,
    /** The host's config name. */
    readonly host: string,
    message: string,
    /** Permanent: retrying cannot help until someone fixes what the message names. */
    readonly permanent: boolean,
    options?: BackendErrorOptions,
  ) {
    super(message, options);
    this.code = `LIBVIRT_DIAL_${stage.toUpperCase()}`;
  }
}

/** An image download that failed; `permanent` when the config or the server must change. */
export class ImageError extends BackendError {
  /** `@proxy-op/libvirt-provider.ImageError`: the key of the class's brand. */
  static override readonly brand: string = '@proxy-op/libvirt-provider.ImageError';
  /** `LIBVIRT_IMAGE_<KIND>`, for instance `LIBVIRT_IMAGE_SHA256`. */
  readonly code: string;
  constructor(
    /** What failed: the HTTP status, the length, the checksum, a short body or the image's size. */
    readonly kind: 'status' | 'length' | 'sha256' | 'short' | 'size',
    message: string,
    /** Permanent: the config or the server must change before a retry can succeed. */
    readonly permanent: boolean,
    options?: BackendErrorOptions,
  ) {
    super(message, options);
    this.code = `LIBVIRT_IMAGE_${kind.toUpperCase()}`;
  }
}

/** A metadata element the namespace cannot read: Permanent where it matters. */
export class MarkFormatError extends BackendError {
  /** `@proxy-op/libvirt-provider.MarkFormatError`: the key of the class's brand. */
  static override readonly brand: string = '@proxy-op/libvirt-provider.MarkFormatError';
  /** Always `LIBVIRT_MARK_UNREADABLE`. */
  readonly code = 'LIBVIRT_MARK_UNREADABLE';
}

/**
 * A program the guest agent ran that did not exit 0 (Transient unless the
 * operation decides otherwise). `stderr` holds the first line it wrote
 * there, which names paths and reasons, never the data it was given.
 */
export class GuestProgramError extends BackendError {
  /** `@proxy-op/libvirt-provider.GuestProgramError`: the key of the class's brand. */
  static override readonly brand: string = '@proxy-op/libvirt-provider.GuestProgramError';
  /** Always `LIBVIRT_GUEST_PROGRAM_FAILED`. */
  readonly code = 'LIBVIRT_GUEST_PROGRAM_FAILED';
  constructor(
    /** The program's path. */
    readonly program: string,
    /** Its exit code, or undefined when a signal ended it. */
    readonly exitCode: number | undefined,
    /** The first line of its stderr. */
    readonly stderr: string,
  ) {
    super(
      `${program} in the guest ${exitCode === undefined ? 'was killed' : `exited ${exitCode}`}${stderr === '' ? '' : `: ${stderr}`}`,
    );
  }
}
