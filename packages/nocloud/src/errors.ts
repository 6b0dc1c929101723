const BRAND = Symbol.for('@proxy-op/nocloud.NoCloudError');

/**
 * The stable codes a {@link NoCloudError} carries. Codes are API: they do
 * not change within a major version, while messages may.
 *
 * - `NOCLOUD_INVALID_NAME`: an instance id, hostname or ISO file name that
 *   cloud-init or the ISO format would not accept.
 * - `NOCLOUD_INVALID_LABEL`: a volume label other than `cidata` for a seed,
 *   or one the ISO format cannot hold.
 * - `NOCLOUD_TOO_LARGE`: a file or a whole volume over the documented limit.
 * - `NOCLOUD_INVALID_VENDOR_DATA`: configured vendor data that cannot be
 *   joined into a multipart cloud-init would read.
 */
export type NoCloudErrorCode =
  | 'NOCLOUD_INVALID_NAME'
  | 'NOCLOUD_INVALID_LABEL'
  | 'NOCLOUD_TOO_LARGE'
  | 'NOCLOUD_INVALID_VENDOR_DATA';

/**
 * A value given to this package that it cannot turn into a seed. `field`
 * names the option at fault and the message says how to fix it. Wrong
 * argument types are programmer misuse and throw `TypeError` instead.
 */
export class NoCloudError extends Error {
  /** Always `'NoCloudError'`. */
  override readonly name = 'NoCloudError';
  /** What kind of problem this is; stable, see {@link NoCloudErrorCode}. */
  readonly code: NoCloudErrorCode;
  /** The option at fault, for example `'hostname'` or `'files[2].name'`. */
  readonly field: string;

  /**
   * @param code - the kind of problem
   * @param field - the option at fault
   * @param message - what is wrong and how to fix it
   * @param options - an optional `cause`
   */
  constructor(
    code: NoCloudErrorCode,
    field: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.code = code;
    this.field = field;
    Object.defineProperty(this, BRAND, { value: true });
  }

  /**
   * True for a `NoCloudError` from any installed copy of this package,
   * where `instanceof` would miss one loaded from another copy.
   */
  static isInstance(value: unknown): value is NoCloudError {
    return (
      typeof value === 'object' &&
      value !== null &&
      (value as { [BRAND]?: unknown })[BRAND] === true
    );
  }
}
