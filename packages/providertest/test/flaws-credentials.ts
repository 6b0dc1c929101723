// Test support: broken variants of the reference provider's proxy credentials (Create's password
// file, updateAuth) and a harness without the hook, each with the checks of the credentials
// section it must fail.
import type { OperationContext, ProxyAuth } from '@proxy-op/contract';
import { parsePasswordFile } from '@proxy-op/htpasswd';
import { type MemoryId, MemoryImplementation } from '../src/reference/provider.js';
import { type Flaw, label, variant, wrapped } from './flaws.js';

const decode = (b: Uint8Array) => new TextDecoder().decode(b);

/** Test name → the failing check's message, for the flaws below. */
const T = {
  has: 'an in-place provider has updateAuth',
  create: 'a Create with a password file lets its user in and no one else',
  overlap: 'updateAuth takes a new credential in place, the old one kept through the overlap',
  ends: 'updateAuth without the old credential refuses it within authSettleMs',
  gone: 'updateAuth of a gone or unmarked instance is NotFound, of a malformed ID Permanent',
  empty: 'an empty password file is Permanent before any backend call',
  leaks: 'the password file never reaches logs, spans or errors',
} as const;

/** The reference harness's refusal when the simulated proxy refuses the origin it is asked for. */
const REFUSED_ORIGIN =
  /^harness: the proxy of vms\/\S+ refused the destination 127\.0\.0\.1:8080 \(403\)/;

export const CREDENTIAL_FLAWS: Record<string, Flaw> = {
  'no-update-auth': {
    about: 'declares in-place rotation and has no updateAuth',
    wrap: (p) => {
      const { updateAuth: _gone, ...rest } = wrapped(p, {});
      return rest;
    },
    fails: {
      [T.has]: label('the type of provider.updateAuth'),
      [T.gone]: label('the provider has updateAuth'),
    },
  },
  'create-ignores-auth': {
    about: "never writes a Create's password file, so its proxy lets anyone in",
    module: variant(
      class extends MemoryImplementation {
        protected override async writePasswordFile(): Promise<void> {}
      },
    ),
    fails: { [T.create]: label('a user the file does not hold accepted') },
  },
  'create-ignores-egress': {
    about: "never writes a Create's destination policy, so its proxy refuses the origin allowed",
    module: variant(
      class extends MemoryImplementation {
        protected override async writeEgressPolicy(): Promise<void> {}
      },
    ),
    fails: {
      [T.create]: REFUSED_ORIGIN,
      [T.overlap]: REFUSED_ORIGIN,
      [T.ends]: REFUSED_ORIGIN,
    },
  },
  'update-auth-changes-nothing': {
    about: 'resolves updateAuth without writing the file',
    module: variant(
      class extends MemoryImplementation {
        override async updateAuth(id: MemoryId, _auth: ProxyAuth, ctx: OperationContext) {
          await this.seam.lookup(id.name, ctx.signal);
        }
      },
    ),
    fails: {
      [T.overlap]: label('the new credential accepted within'),
      [T.ends]: label('the removed credential refused within'),
    },
  },
  'update-auth-keeps-removed-users': {
    about: 'merges the new password file into the old one, so a removed user stays',
    module: variant(
      class extends MemoryImplementation {
        override async updateAuth(id: MemoryId, auth: ProxyAuth, ctx: OperationContext) {
          const vm = await this.seam.lookup(id.name, ctx.signal);
          const given = decode(auth.passwordFile);
          const users = parsePasswordFile(given);
          const kept = decode(vm?.passwordFile ?? new Uint8Array())
            .split('\n')
            .filter((line) => line !== '' && !users.has(line.slice(0, line.indexOf(':'))));
          const merged = `${given}${kept.map((l) => `${l}\n`).join('')}`;
          await super.updateAuth(
            id,
            { ...auth, passwordFile: new TextEncoder().encode(merged) },
            ctx,
          );
        }
      },
    ),
    fails: { [T.ends]: label('the removed credential refused within') },
  },
  'update-auth-truncates-first': {
    about: 'writes the new file in two steps, its last line first and the rest after resolving',
    module: variant(
      class extends MemoryImplementation {
        override async updateAuth(id: MemoryId, auth: ProxyAuth, ctx: OperationContext) {
          const lines = decode(auth.passwordFile).split('\n').filter(Boolean);
          const last = new TextEncoder().encode(`${lines.at(-1)}\n`);
          await super.updateAuth(id, { ...auth, passwordFile: last }, ctx);
          setTimeout(() => {
            this.seam.putPasswordFile(id.name, auth.passwordFile).catch(() => {});
          }, 500).unref();
        }
      },
    ),
    fails: { [T.overlap]: label('a credential refused during the overlap') },
  },
  'update-auth-of-gone-resolves': {
    about: 'resolves updateAuth of an instance that is gone',
    module: variant(
      class extends MemoryImplementation {
        override async updateAuth(id: MemoryId, auth: ProxyAuth, ctx: OperationContext) {
          if ((await this.seam.lookup(id.name, ctx.signal)) === undefined) return;
          await super.updateAuth(id, auth, ctx);
        }
      },
    ),
    fails: { [T.gone]: label('updateAuth of a deleted instance') },
  },
  'update-auth-writes-unmarked': {
    about: "writes the password file of an instance that carries no mark (someone else's)",
    module: variant(
      class extends MemoryImplementation {
        override async updateAuth(id: MemoryId, auth: ProxyAuth, ctx: OperationContext) {
          if ((await this.seam.lookup(id.name, ctx.signal)) === undefined) {
            throw ctx.notFound(`instance ${id.name} does not exist`);
          }
          await this.seam.putPasswordFile(id.name, auth.passwordFile, ctx.signal);
        }
      },
    ),
    fails: { [T.gone]: label('updateAuth of an instance that carries no mark') },
  },
  'auth-checked-after-a-call': {
    about: 'looks at the backend before refusing an empty password file',
    wrap: (p) =>
      wrapped(p, {
        create: async (req, o) => {
          if (req.auth?.passwordFile.length === 0) await p.listByTag();
          return p.create(req, o);
        },
        updateAuth: async (id, auth, o) => {
          if (auth.passwordFile.length === 0) await p.get(id);
          return p.updateAuth!(id, auth, o);
        },
      }),
    fails: {
      [T.empty]: label('backend calls and instances after a Create with an empty password file'),
    },
  },
  'empty-file-kept': {
    about: 'takes an empty password file in updateAuth as "no change"',
    wrap: (p) =>
      wrapped(p, {
        updateAuth: (id, auth, o) =>
          auth.passwordFile.length === 0 ? Promise.resolve() : p.updateAuth!(id, auth, o),
      }),
    fails: { [T.empty]: label('class of updateAuth with an empty password file') },
  },
  'logs-password-file': {
    about: 'logs the password file of updateAuth at debug, base64-encoded',
    module: variant(
      class extends MemoryImplementation {
        override async updateAuth(id: MemoryId, auth: ProxyAuth, ctx: OperationContext) {
          this.log.debug(
            { name: id.name, file: Buffer.from(auth.passwordFile).toString('base64') },
            'memory password file',
          );
          await super.updateAuth(id, auth, ctx);
        }
      },
    ),
    fails: { [T.leaks]: label('the password file in the logs') },
  },
  'refusal-echoes-password-file': {
    about: 'quotes the password file it was given in a NotFound',
    module: variant(
      class extends MemoryImplementation {
        override async updateAuth(id: MemoryId, auth: ProxyAuth, ctx: OperationContext) {
          if ((await this.seam.lookup(id.name, ctx.signal)) === undefined) {
            throw ctx.notFound(`no instance ${id.name} to write ${decode(auth.passwordFile)} to`);
          }
          await super.updateAuth(id, auth, ctx);
        }
      },
    ),
    fails: { [T.leaks]: label('the password file in an error') },
  },
  'harness-without-credential-origin': {
    about: 'asks the proxy for an origin on its host without naming it, so no Create allows it',
    harness: (h) => {
      const { credentialOrigin: _gone, ...rest } = h;
      return rest;
    },
    fails: {
      [T.create]: REFUSED_ORIGIN,
      [T.overlap]: REFUSED_ORIGIN,
      [T.ends]: REFUSED_ORIGIN,
    },
  },
  'harness-without-accepts-credential': {
    about: 'declares in-place rotation with a harness that cannot ask the proxy',
    harness: (h) => {
      const { acceptsCredential: _gone, ...rest } = h;
      return rest;
    },
    fails: {
      [T.create]: label('the harness implements acceptsCredential'),
      [T.overlap]: label('the harness implements acceptsCredential'),
      [T.ends]: label('the harness implements acceptsCredential'),
    },
  },
};
