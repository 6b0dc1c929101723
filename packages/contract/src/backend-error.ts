/**
 * The base of the errors a provider's backend layer throws (an API answer,
 * a dial failure, a call past its budget) before the shell turns them into
 * {@link ProviderError}s. It carries a stable `code` and a `Symbol.for`
 * brand per class, so `isInstance` works across two installed copies of a
 * provider package, where `instanceof` does not.
 *
 * @module
 */

const BRAND = Symbol.for('@proxy-op/contract.BackendError');

/** The options every {@link BackendError} constructor passes on to `Error`. */
export interface BackendErrorOptions {
  /** The underlying failure. */
  readonly cause?: unknown;
}

/**
 * A backend failure, branded. A subclass names its brand once, as the
 * package and class (`@proxy-op/provider-gcp.ComputeApiError`); its `name`
 * is the part after the last dot, and `Subclass.isInstance(err)` is true
 * for an instance of that class or of a class below it, from any copy of
 * the package that defines it.
 *
 * ```ts
 * class ApiError extends BackendError {
 *   static override readonly brand: string = '@example/provider-acme.ApiError';
 *   readonly code = 'ACME_API';
 * }
 * ```
 */
export abstract class BackendError extends Error {
  /** `<package>.<Class>`: the key of the class's brand. Every subclass sets its own. */
  static readonly brand: string = '@proxy-op/contract.BackendError';

  /** A stable machine-readable code. */
  abstract readonly code: string;

  constructor(message: string, options?: BackendErrorOptions) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    if (!Object.hasOwn(new.target, 'brand')) {
      throw new TypeError(`${new.target.name} must declare its own static brand`);
    }
    const brands: string[] = [];
    for (let c: unknown = new.target; typeof c === 'function'; c = Object.getPrototypeOf(c)) {
      const brand = (c as { brand?: unknown }).brand;
      if (typeof brand === 'string' && !brands.includes(brand)) brands.push(brand);
      if (c === BackendError) break;
    }
    Object.defineProperty(this, BRAND, { value: Object.freeze(brands) });
  }

  /**
   * The class's own name, read from its brand, so it survives minification and a second copy of the
   * package.
   */
  override get name(): string {
    const brand = (this.constructor as { brand?: unknown }).brand;
    return typeof brand === 'string' ? brand.slice(brand.lastIndexOf('.') + 1) : 'BackendError';
  }

  /** True for an instance of this class (or one below it) from any copy of its package. */
  static isInstance<T>(
    this: { readonly brand: string; readonly prototype: T },
    value: unknown,
  ): value is T {
    if (typeof value !== 'object' || value === null) return false;
    const brands = (value as Record<symbol, unknown>)[BRAND];
    // biome-ignore lint/complexity/noThisInStatic: `this` is the subclass whose brand is asked for.
    return Array.isArray(brands) && brands.includes(this.brand);
  }
}
