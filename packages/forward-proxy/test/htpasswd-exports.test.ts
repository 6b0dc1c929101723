// Peer: none: the password-file exports of this package are @proxy-op/htpasswd's, unchanged.
import * as htpasswd from '@proxy-op/htpasswd';
import { expect, it } from 'vitest';
import * as proxy from '../src/index.js';

it('exports hashPassword, verifyPassword and parsePasswordFile of @proxy-op/htpasswd', () => {
  expect(proxy.hashPassword).toBe(htpasswd.hashPassword);
  expect(proxy.verifyPassword).toBe(htpasswd.verifyPassword);
  expect(proxy.parsePasswordFile).toBe(htpasswd.parsePasswordFile);
});
