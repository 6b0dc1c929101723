// Peer: none (a pure function): what the access log keeps of a target.
import { describe, expect, it } from 'vitest';
import { targetForLog } from '../src/log-target.js';

describe('targetForLog', () => {
  it('drops user info and the query, in every form a target takes', () => {
    expect(targetForLog('http://bob:s3cret@example.com:8080/a/b?token=x#f')).toBe(
      'http://example.com:8080/a/b',
    );
    expect(targetForLog('http://a@b@example.com/p')).toBe('http://example.com/p');
    expect(targetForLog('HTTP://bob:pw@Example.com')).toBe('HTTP://Example.com');
    expect(targetForLog('bob:pw@example.com:443')).toBe('example.com:443');
    expect(targetForLog('example.com:443')).toBe('example.com:443');
    expect(targetForLog('/healthz?x=1')).toBe('/healthz');
    expect(targetForLog('http://example.com/@not-userinfo')).toBe(
      'http://example.com/@not-userinfo',
    );
  });
});
