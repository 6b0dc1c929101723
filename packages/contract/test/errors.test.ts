// Peer: none (in-process); the cross-copy test loads a second copy of the built package from a temp dir.
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  ErrorCode,
  errorClassOf,
  isNotFound,
  isPermanent,
  isQuotaExceeded,
  isTransient,
  NotFoundError,
  notFound,
  PermanentError,
  ProviderError,
  permanent,
  providerError,
  QuotaExceededError,
  quotaExceeded,
  TransientError,
  toProviderError,
  transient,
} from '../src/index.js';

describe('ProviderError', () => {
  it.each([
    ['NotFound', NotFoundError, 'PROVIDER_NOT_FOUND', isNotFound],
    ['Transient', TransientError, 'PROVIDER_TRANSIENT', isTransient],
    ['Permanent', PermanentError, 'PROVIDER_PERMANENT', isPermanent],
    ['QuotaExceeded', QuotaExceededError, 'PROVIDER_QUOTA_EXCEEDED', isQuotaExceeded],
  ] as const)('%s has its subclass, stable code and predicate', (cls, Ctor, code, pred) => {
    const cause = new Error('root');
    const err = providerError(cls, { provider: 'pve-a', op: 'get', message: 'm', cause });
    expect(err).toBeInstanceOf(Ctor);
    expect(err).toBeInstanceOf(ProviderError);
    expect(err).toBeInstanceOf(Error);
    expect(err.code).toBe(code);
    expect(ErrorCode[cls]).toBe(code);
    expect(err.errorClass).toBe(cls);
    expect(err.name).toBe('ProviderError');
    expect(err.provider).toBe('pve-a');
    expect(err.op).toBe('get');
    expect(err.cause).toBe(cause);
    expect(pred(err)).toBe(true);
    expect(errorClassOf(err)).toBe(cls);
    expect(ProviderError.isInstance(err)).toBe(true);
  });

  it('the predicates are false for other classes and for plain errors', () => {
    const t = transient('p', 'get', 'x');
    expect(isNotFound(t)).toBe(false);
    expect(isPermanent(t)).toBe(false);
    expect(isQuotaExceeded(t)).toBe(false);
    expect(isTransient(new Error('x'))).toBe(false);
    expect(ProviderError.isInstance({ errorClass: 'NotFound' })).toBe(false);
    expect(ProviderError.isInstance(null)).toBe(false);
    expect(ProviderError.isInstance('PROVIDER_NOT_FOUND')).toBe(false);
  });

  it('the shorthands build the right class', () => {
    expect(permanent('p', 'create', 'm')).toBeInstanceOf(PermanentError);
    expect(transient('p', 'create', 'm')).toBeInstanceOf(TransientError);
    expect(notFound('p', 'get', 'm')).toBeInstanceOf(NotFoundError);
    expect(quotaExceeded('p', 'create', 'm')).toBeInstanceOf(QuotaExceededError);
  });

  it('unclassified failures are Transient by default', () => {
    expect(errorClassOf(new Error('boom'))).toBe('Transient');
    expect(errorClassOf(undefined)).toBe('Transient');
  });

  it('toJSON has the fields and no cause or stack', () => {
    const err = permanent('p', 'get', 'bad id', new Error('secret-cause'));
    expect(err.toJSON()).toEqual({
      name: 'ProviderError',
      code: 'PROVIDER_PERMANENT',
      errorClass: 'Permanent',
      provider: 'p',
      op: 'get',
      message: 'bad id',
    });
    expect(JSON.stringify(err)).not.toContain('secret-cause');
  });

  it('misuse of the constructor is a TypeError', () => {
    expect(() =>
      providerError('Nope' as never, { provider: 'p', op: 'get', message: 'm' }),
    ).toThrow(TypeError);
  });
});

describe('toProviderError', () => {
  it('keeps a ProviderError as it is', () => {
    const err = permanent('p', 'get', 'm');
    expect(toProviderError('p', 'get', err)).toBe(err);
  });

  it('classifies a foreign error with the classifier and keeps it as cause', () => {
    const cause = new Error('404');
    const err = toProviderError('p', 'get', cause, () => 'NotFound');
    expect(err.errorClass).toBe('NotFound');
    expect(err.cause).toBe(cause);
    expect(err.provider).toBe('p');
  });

  it('inside create, NotFound becomes Transient (create never answers NotFound)', () => {
    expect(toProviderError('p', 'create', new Error('x'), () => 'NotFound').errorClass).toBe(
      'Transient',
    );
    const nf = notFound('p', 'create', 'vanished');
    const out = toProviderError('p', 'create', nf);
    expect(out.errorClass).toBe('Transient');
    expect(out.cause).toBe(nf);
  });
});

describe('cross-copy isInstance', () => {
  it('recognises errors from a second installed copy of the package', async () => {
    const dist = fileURLToPath(new URL('../dist', import.meta.url));
    const dir = await mkdtemp(join(tmpdir(), 'contract-copy-'));
    try {
      await cp(dist, join(dir, 'dist'), { recursive: true });
      const copy = (await import(
        pathToFileURL(join(dir, 'dist', 'errors.js')).href
      )) as typeof import('../src/errors.js');
      expect(copy.ProviderError).not.toBe(ProviderError);
      const foreign = copy.permanent('p', 'get', 'from the other copy');
      expect(foreign instanceof ProviderError).toBe(false);
      expect(ProviderError.isInstance(foreign)).toBe(true);
      expect(isPermanent(foreign)).toBe(true);
      expect(errorClassOf(foreign)).toBe('Permanent');
      expect(copy.ProviderError.isInstance(transient('p', 'get', 'm'))).toBe(true);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
