// Peer: none: the text of a password file, read as Squid's basic_ncsa_auth reads it.
import { describe, expect, it } from 'vitest';
import { hashPassword, parsePasswordFile, verifyPassword } from '../src/index.js';

describe('parsePasswordFile', () => {
  it('reads user:hash lines, skipping comments and blank lines', () => {
    const users = parsePasswordFile(
      '# proxy-op\n\nalice:$6$a$x\r\n  # indented comment\nbob:$5$b$y:a comment field\n',
    );
    expect([...users]).toEqual([
      ['alice', '$6$a$x'],
      ['bob', '$5$b$y'],
    ]);
    expect(users.skippedLines).toEqual([]);
  });

  it('skips malformed lines and says which, never what they held', () => {
    const users = parsePasswordFile(
      [
        'alice:$6$a$x',
        'no colon here',
        ':$6$nobody$',
        'carol:',
        'dave:$6$\u0001$',
        'alice:$6$again$',
        'erin:$6$e$z',
      ].join('\n'),
    );
    expect([...users.keys()]).toEqual(['alice', 'erin']);
    expect(users.get('alice')).toBe('$6$a$x'); // the first line of a user counts
    expect(users.skippedLines).toEqual([2, 3, 4, 5, 6]);
  });

  it('gives back the hash a line was written with, which verifies its password', () => {
    const text = `alice:${hashPassword('p$ss:w@rd', { rounds: 1000 })}\nbob:${hashPassword('b')}\n`;
    const users = parsePasswordFile(text);
    expect(verifyPassword('p$ss:w@rd', users.get('alice') as string)).toBe(true);
    expect(verifyPassword('b', users.get('alice') as string)).toBe(false);
    expect(verifyPassword('b', users.get('bob') as string)).toBe(true);
  });
});
