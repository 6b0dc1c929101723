// The classify table of the libvirt providers: realistic failures as the
// engine meets them (libvirt's texts from the seam contract), and their classes.
import { BudgetError, QuotaExceededError } from '@proxy-op/contract';
import { RpcError } from '@proxy-op/libvirt-rpc';
import { SshDialError } from '@proxy-op/libvirt-rpc/ssh';
import type { BackendHarness } from '@proxy-op/providertest';
import { DialError, ImageError, MarkFormatError } from '../../src/errors.js';
import { Err } from './model-errors.js';

const sshAuth = new SshDialError('auth', 'ssh dial 192.0.2.10:22: authentication refused', {
  cause: Object.assign(new Error('All configured authentication methods failed'), {
    level: 'client-authentication',
  }),
});
const sshHostKey = new SshDialError('hostkey', 'ssh dial 192.0.2.10:22: host key not accepted');

/** Realistic failures as the engine meets them (libvirt's texts from seam.real.test.ts), and their classes. */
export const CLASSIFY_CASES: BackendHarness['classifyCases'] = [
  {
    name: 'no domain with matching name',
    op: 'get',
    error: Err.noDomainByName('proxy-a'),
    want: 'NotFound',
  },
  {
    name: 'no domain with matching uuid',
    op: 'delete',
    error: Err.noDomainByUuid('00000000-0000-0000-0000-000000000000', 'proxy-a'),
    want: 'NotFound',
  },
  { name: 'no storage vol', op: 'delete', error: Err.noVol('proxy-a.qcow2'), want: 'NotFound' },
  { name: 'no storage pool', op: 'create', error: Err.noPool('default'), want: 'Permanent' },
  {
    name: 'malformed domain XML',
    op: 'create',
    error: Err.xml("Couldn't find end of Start Tag domain line 1"),
    want: 'Permanent',
  },
  {
    name: 'access denied by the ACL driver',
    op: 'list',
    error: Err.accessDenied(),
    want: 'Permanent',
  },
  { name: 'SSH authentication refused', op: 'get', error: sshAuth, want: 'Permanent' },
  { name: 'SSH host key not accepted', op: 'list', error: sshHostKey, want: 'Permanent' },
  {
    name: 'dial: host key refused',
    op: 'get',
    error: new DialError('hostkey', 'kvm-a', 'host key refused', true, { cause: sshHostKey }),
    want: 'Permanent',
  },
  {
    name: 'dial: key file unreadable',
    op: 'get',
    error: new DialError('credentials', 'kvm-a', 'cannot read sshKeyFile (ENOENT)', false),
    want: 'Transient',
  },
  {
    name: 'dial: key file holds no key',
    op: 'get',
    error: new DialError('credentials', 'kvm-a', 'not a private key', true),
    want: 'Permanent',
  },
  {
    name: 'dial: connection refused',
    op: 'create',
    error: new DialError('connect', 'kvm-a', 'ECONNREFUSED', false),
    want: 'Transient',
  },
  {
    name: 'dial: libvirtd socket missing',
    op: 'create',
    error: new DialError('channel', 'kvm-a', 'open failed', false),
    want: 'Transient',
  },
  { name: 'domain is not running', op: 'delete', error: Err.notRunning(), want: 'Transient' },
  {
    name: 'domain is already running',
    op: 'create',
    error: Err.alreadyRunning(),
    want: 'Transient',
  },
  {
    name: 'domain already exists with uuid',
    op: 'create',
    error: Err.domainExists('proxy-a', '00000000-0000-0000-0000-000000000000'),
    want: 'Transient',
  },
  {
    name: 'guest agent not connected',
    op: 'get',
    error: Err.agentNotConnected(),
    want: 'Transient',
  },
  { name: 'ARP table unreadable', op: 'get', error: Err.arpUnreadable(), want: 'Transient' },
  {
    name: 'storage pool not active',
    op: 'create',
    error: Err.poolInactive('default'),
    want: 'Transient',
  },
  {
    name: 'connection closed',
    op: 'get',
    error: new RpcError('ERR_RPC_CLOSED', 'DOMAIN_GET_STATE: connection closed'),
    want: 'Transient',
  },
  {
    name: 'keepalive lost',
    op: 'list',
    error: new RpcError('ERR_RPC_KEEPALIVE', 'no keepalive answer'),
    want: 'Transient',
  },
  {
    name: 'a call past its budget',
    op: 'get',
    error: new BudgetError('domainGetState', 30_000),
    want: 'Transient',
  },
  {
    name: 'image 404',
    op: 'create',
    error: new ImageError('status', 'GET answered 404', true),
    want: 'Permanent',
  },
  {
    name: 'image 503',
    op: 'create',
    error: new ImageError('status', 'GET answered 503', false),
    want: 'Transient',
  },
  {
    name: 'image SHA-256 mismatch',
    op: 'create',
    error: new ImageError('sha256', 'mismatch', true),
    want: 'Permanent',
  },
  {
    name: 'image body cut short',
    op: 'create',
    error: new ImageError('short', 'ended early', false),
    want: 'Transient',
  },
  {
    name: 'unreadable mark element',
    op: 'get',
    error: new MarkFormatError('not <instance>'),
    want: 'Permanent',
  },
  {
    name: 'the pool-space precheck',
    op: 'create',
    error: new QuotaExceededError({
      provider: 'x',
      op: 'create',
      message: 'pool default has 0.01 GiB free',
    }),
    want: 'QuotaExceeded',
  },
];
