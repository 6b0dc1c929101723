/**
 * Returns a greeting for `name`. Replace this module when the template is
 * copied into a new package.
 *
 * @example
 * ```ts
 * greet('proxy-op'); // 'hello, proxy-op'
 * ```
 */
export function greet(name: string): string {
  if (typeof name !== 'string' || name === '') {
    throw new TypeError('greet: name must be a non-empty string');
  }
  return `hello, ${name}`;
}
