// Test support (not a test file) for proxy authentication: Squid's password helper and the
// passwords that need escaping somewhere on their way (in a URL, the password file, the helper's
// protocol).
/** Squid's helper for NCSA-style password files, as Debian's `squid` installs it. */
export const NCSA_HELPER = '/usr/lib/squid/basic_ncsa_auth';

/** The passwords every test of special characters uses. */
export const AWKWARD_PASSWORDS: readonly string[] = [
  'p$ss:w@rd %20 ünï',
  '$6$notahash$',
  'colon:at@percent%25',
  ' leading and trailing spaces ',
  'ключ-密码-🔑',
];
