// The PVE API as the double serves it: the paths the provider calls, each
// with its parameter schema (names, types, formats, limits), checked the way
// pve-common's JSONSchema does before the model is asked. Both doubles go
// through here: the HTTPS fake with what came over the wire (query string
// and body merged, as pveproxy does), the seam fake with what the HTTPS
// client would have sent.
import { normaliseNet, PveError, type PveModel, paramError } from './pve-model.js';

/** A parameter of an API method, as far as the double checks it. */
interface Param {
  /** `array`: of strings; a single value is taken as a list of one (RESTHandler's legacy rule). */
  readonly type: 'string' | 'integer' | 'boolean' | 'number' | 'array';
  readonly optional?: boolean;
  readonly minimum?: number;
  readonly maximum?: number;
  readonly enum?: readonly string[];
  readonly pattern?: RegExp;
  readonly maxLength?: number;
  /** A format check: a message (ending in a newline, as PVE's die does) when the value is not valid. */
  readonly format?: (v: string) => string | undefined;
}

type Params = Record<string, string>;
/** Parameters as they came: a repeated form field is a list. */
export type GivenParams = Readonly<Record<string, string | readonly string[]>>;

/** What a handler gets: the checked parameters, the file of an upload, and who asks. */
export interface Call {
  readonly params: Params;
  /** The checked parameters of type `array`. */
  readonly lists: Readonly<Record<string, readonly string[]>>;
  readonly file: { readonly name: string; readonly data: Uint8Array } | undefined;
  /** The token's user (`user@realm!token`), for task ids. */
  readonly user: string;
}

/** One API method. */
export interface Endpoint {
  readonly method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** Under /api2/json, `{name}` for a path parameter; the last may take the rest (`{volume*}`). */
  readonly path: string;
  /** The seam method it belongs to. */
  readonly call: string;
  readonly params: Readonly<Record<string, Param>>;
  /** An upload: pveproxy takes a multipart body for it. */
  readonly upload?: boolean;
  readonly run: (m: PveModel, c: Call) => unknown;
}

const nodeFormat = (v: string) =>
  /^[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?$/.test(v)
    ? undefined
    : 'value does not look like a valid node name\n';
const vmidFormat = (v: string) =>
  /^[1-9][0-9]{2,8}$/.test(v) ? undefined : 'value does not look like a valid VM ID\n';
const storageFormat = (v: string) =>
  v.length < 2
    ? `storage ID '${v}' cannot be shorter than 2 characters\n`
    : /^[a-z][a-z0-9\-_.]*[a-z0-9]$/i.test(v)
      ? undefined
      : `storage ID '${v}' contains illegal characters\n`;
const dnsFormat = (v: string) =>
  /^(([a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?)\.)*([a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?)$/.test(v)
    ? undefined
    : 'value does not look like a valid DNS name\n';
const tagListFormat = (v: string) =>
  v
    .split(/[;,\s]+/)
    .filter((t) => t !== '')
    .every((t) => /^[a-z0-9_][a-z0-9_\-+.]*$/i.test(t))
    ? undefined
    : 'invalid characters in tag\n';
const configIdListFormat = (v: string) => {
  for (const id of v.split(/[;,\s]+/).filter((t) => t !== '')) {
    if (!/^[a-z][a-z0-9_]+$/i.test(id)) return `invalid configuration ID '${id}'\n`;
  }
  return undefined;
};
const netFormat = (v: string) => {
  try {
    normaliseNet(v);
    return undefined;
  } catch (err) {
    return (err as Error).message.replace(/^invalid format - /, '');
  }
};
const agentFormat = (v: string) => {
  for (const [i, part] of v.split(',').entries()) {
    const [k, val] = part.includes('=')
      ? (part.split('=', 2) as [string, string])
      : ['enabled', part];
    if (i > 0 && !part.includes('='))
      return 'format error\nenabled: duplicate key in comma-separated list property\n';
    if (['enabled', 'fstrim_cloned_disks', 'freeze-fs', 'freeze-fs-on-backup'].includes(k)) {
      if (val !== '0' && val !== '1')
        return `format error\n${k}: type check ('boolean') failed - got '${val}'\n`;
    } else if (k === 'type') {
      if (val !== 'virtio' && val !== 'isa')
        return `format error\ntype: value '${val}' does not have a value in the enumeration 'virtio, isa'\n`;
    } else {
      return `format error\n${k}: property is not defined in schema and the schema does not allow additional properties\n`;
    }
  }
  return undefined;
};
const memoryFormat = (v: string) =>
  /^(current=)?\d+$/.test(v) && Number(/\d+/.exec(v)?.[0]) >= 16
    ? undefined
    : `format error\ncurrent: type check ('integer') failed - got '${v.replace(/^current=/, '')}'\n`;
const driveFormat = (v: string) => {
  const [volume, ...opts] = v.split(',');
  if (volume === undefined || volume === '')
    return 'format error\nfile: property is missing and it is not optional\n';
  for (const o of opts) {
    if (!/^[a-z_-]+=[^,]*$/.test(o))
      return `format error\n${o}: property is not defined in schema and the schema does not allow additional properties\n`;
  }
  return undefined;
};
const bootFormat = (v: string) =>
  /^order=[a-z0-9]+(;[a-z0-9]+)*$/.test(v) || /^[acdn]{1,4}$/.test(v)
    ? undefined
    : 'format error\norder: value does not match the regex pattern\n';

const str: Param = { type: 'string' };
const optStr: Param = { type: 'string', optional: true };
const optBool: Param = { type: 'boolean', optional: true };
const node: Param = { type: 'string', format: nodeFormat };
const vmid: Param = { type: 'integer', minimum: 100, maximum: 999_999_999, format: vmidFormat };
const storage: Param = { type: 'string', format: storageFormat };

const DRIVE_NAMES = [
  ...Array.from({ length: 4 }, (_, i) => `ide${i}`),
  ...Array.from({ length: 6 }, (_, i) => `sata${i}`),
  ...Array.from({ length: 31 }, (_, i) => `scsi${i}`),
  ...Array.from({ length: 16 }, (_, i) => `virtio${i}`),
];

/** The VM options `PUT .../config` knows (qemu-server's config schema), as far as the double checks them. */
export const VM_OPTIONS: Readonly<Record<string, Param>> = Object.freeze({
  name: { type: 'string', optional: true, format: dnsFormat },
  description: { type: 'string', optional: true, maxLength: 8192 },
  tags: { type: 'string', optional: true, format: tagListFormat },
  cores: { type: 'integer', optional: true, minimum: 1 },
  sockets: { type: 'integer', optional: true, minimum: 1 },
  memory: { type: 'string', optional: true, format: memoryFormat },
  balloon: { type: 'integer', optional: true, minimum: 0 },
  agent: { type: 'string', optional: true, format: agentFormat },
  boot: { type: 'string', optional: true, format: bootFormat },
  bootdisk: { type: 'string', optional: true, pattern: /(ide|sata|scsi|virtio)\d+/ },
  onboot: optBool,
  protection: optBool,
  numa: optBool,
  ostype: {
    type: 'string',
    optional: true,
    enum: [
      'other',
      'wxp',
      'w2k',
      'w2k3',
      'w2k8',
      'wvista',
      'win7',
      'win8',
      'win10',
      'win11',
      'l24',
      'l26',
      'solaris',
    ],
  },
  scsihw: {
    type: 'string',
    optional: true,
    enum: ['lsi', 'lsi53c810', 'virtio-scsi-pci', 'virtio-scsi-single', 'megasas', 'pvscsi'],
  },
  cpu: optStr,
  vga: optStr,
  machine: optStr,
  bios: { type: 'string', optional: true, enum: ['seabios', 'ovmf'] },
  smbios1: optStr,
  vmgenid: optStr,
  serial0: optStr,
  hotplug: optStr,
  efidisk0: { type: 'string', optional: true, format: driveFormat },
  ...Object.fromEntries(
    DRIVE_NAMES.map((d) => [d, { type: 'string', optional: true, format: driveFormat }]),
  ),
  ...Object.fromEntries(
    Array.from({ length: 32 }, (_, i) => [
      `net${i}`,
      { type: 'string', optional: true, format: netFormat },
    ]),
  ),
  ...Object.fromEntries(
    Array.from({ length: 256 }, (_, i) => [
      `unused${i}`,
      { type: 'string', optional: true, format: driveFormat },
    ]),
  ),
});

const routes: readonly Endpoint[] = [
  {
    method: 'GET',
    path: '/version',
    call: 'version',
    params: {},
    run: (m) => m.version(),
  },
  {
    method: 'GET',
    path: '/nodes/{node}/status',
    call: 'nodeStatus',
    params: { node },
    run: (m, c) => m.nodeStatus(c.params.node as string),
  },
  {
    method: 'GET',
    path: '/nodes/{node}/storage/{storage}/status',
    call: 'storageStatus',
    params: { node, storage },
    run: (m, c) => m.storageStatus(c.params.node as string, c.params.storage as string),
  },
  {
    method: 'GET',
    path: '/nodes/{node}/storage',
    call: 'storageList',
    params: {
      node,
      content: optStr,
      enabled: optBool,
      format: optBool,
      storage: { ...storage, optional: true },
      target: { ...node, optional: true },
    },
    run: (m, c) => m.storageList(c.params.node as string, c.params.content),
  },
  {
    method: 'GET',
    path: '/nodes/{node}/storage/{storage}/content',
    call: 'storageContent',
    params: { node, storage, content: optStr, vmid: { ...vmid, optional: true } },
    run: (m, c) =>
      m.storageContent(
        c.params.node as string,
        c.params.storage as string,
        c.params.content,
        c.params.vmid === undefined ? undefined : Number(c.params.vmid),
      ),
  },
  {
    method: 'GET',
    path: '/cluster/resources',
    call: 'clusterResources',
    params: { type: { type: 'string', optional: true, enum: ['vm', 'storage', 'node', 'sdn'] } },
    run: (m, c) => m.clusterResources(c.params.type),
  },
  {
    method: 'GET',
    path: '/nodes/{node}/qemu/{vmid}/config',
    call: 'vmConfig',
    params: { node, vmid, current: optBool, snapshot: optStr },
    run: (m, c) => m.vmConfig(c.params.node as string, Number(c.params.vmid)),
  },
  {
    method: 'PUT',
    path: '/nodes/{node}/qemu/{vmid}/config',
    call: 'setVmConfig',
    params: {
      node,
      vmid,
      ...VM_OPTIONS,
      delete: { type: 'string', optional: true, format: configIdListFormat },
      revert: { type: 'string', optional: true, format: configIdListFormat },
      digest: { type: 'string', optional: true, maxLength: 64 },
      skiplock: optBool,
      force: optBool,
      background_delay: { type: 'integer', optional: true, minimum: 1, maximum: 30 },
    },
    run: (m, c) => {
      const {
        node: n,
        vmid: v,
        delete: del,
        revert,
        digest,
        skiplock,
        force,
        background_delay,
        ...values
      } = c.params;
      void revert;
      void digest;
      void skiplock;
      void force;
      void background_delay;
      const deletes = (del ?? '')
        .split(/[;,\s]+/)
        .filter((d) => d !== '')
        .map((d) => (d === 'cdrom' ? 'ide2' : d));
      for (const d of deletes) {
        if (values[d] !== undefined) {
          throw paramError({ delete: `you can't use '-${d}' and -delete ${d}' at the same time` });
        }
        if (VM_OPTIONS[d] === undefined) throw paramError({ delete: `unknown option '${d}'` });
      }
      return m.setVmConfig(n as string, Number(v), values, deletes);
    },
  },
  {
    method: 'POST',
    path: '/nodes/{node}/qemu/{vmid}/clone',
    call: 'clone',
    params: {
      node,
      vmid,
      newid: vmid,
      name: { type: 'string', optional: true, format: dnsFormat },
      description: optStr,
      pool: optStr,
      snapname: optStr,
      storage: { ...storage, optional: true },
      format: { type: 'string', optional: true, enum: ['raw', 'qcow2', 'vmdk'] },
      full: optBool,
      target: { ...node, optional: true },
      bwlimit: { type: 'integer', optional: true, minimum: 0 },
    },
    run: (m, c) =>
      m.clone(
        c.params.node as string,
        Number(c.params.vmid),
        {
          newid: Number(c.params.newid),
          name: c.params.name,
          description: c.params.description,
          full: c.params.full === undefined ? undefined : c.params.full === '1',
          storage: c.params.storage,
          target: c.params.target,
        },
        c.user,
      ),
  },
  {
    method: 'PUT',
    path: '/nodes/{node}/qemu/{vmid}/resize',
    call: 'resize',
    params: {
      node,
      vmid,
      skiplock: optBool,
      disk: { type: 'string', enum: DRIVE_NAMES },
      size: { type: 'string', pattern: /\+?\d+(\.\d+)?[KMGT]?/ },
      digest: { type: 'string', optional: true, maxLength: 64 },
    },
    run: (m, c) =>
      m.resize(
        c.params.node as string,
        Number(c.params.vmid),
        c.params.disk as string,
        c.params.size as string,
        c.user,
      ),
  },
  {
    method: 'POST',
    path: '/nodes/{node}/qemu/{vmid}/status/start',
    call: 'start',
    params: {
      node,
      vmid,
      skiplock: optBool,
      stateuri: optStr,
      migratedfrom: { ...node, optional: true },
      migration_type: { type: 'string', optional: true, enum: ['secure', 'insecure'] },
      migration_network: optStr,
      machine: optStr,
      'force-cpu': optStr,
      targetstorage: optStr,
      timeout: { type: 'integer', optional: true, minimum: 0 },
    },
    run: (m, c) => m.start(c.params.node as string, Number(c.params.vmid), c.user),
  },
  {
    method: 'POST',
    path: '/nodes/{node}/qemu/{vmid}/status/stop',
    call: 'stop',
    params: {
      node,
      vmid,
      skiplock: optBool,
      migratedfrom: { ...node, optional: true },
      timeout: { type: 'integer', optional: true, minimum: 0 },
      keepActive: optBool,
      'overrule-shutdown': optBool,
    },
    run: (m, c) => m.stop(c.params.node as string, Number(c.params.vmid), c.user),
  },
  {
    method: 'GET',
    path: '/nodes/{node}/qemu/{vmid}/status/current',
    call: 'vmStatus',
    params: { node, vmid },
    run: (m, c) => m.vmStatus(c.params.node as string, Number(c.params.vmid)),
  },
  {
    method: 'DELETE',
    path: '/nodes/{node}/qemu/{vmid}',
    call: 'destroy',
    params: {
      node,
      vmid,
      skiplock: optBool,
      purge: optBool,
      'destroy-unreferenced-disks': optBool,
    },
    run: (m, c) =>
      m.destroy(
        c.params.node as string,
        Number(c.params.vmid),
        {
          purge: c.params.purge === '1',
          unreferencedDisks: c.params['destroy-unreferenced-disks'] === '1',
        },
        c.user,
      ),
  },
  {
    method: 'GET',
    path: '/nodes/{node}/tasks/{upid}/status',
    call: 'taskStatus',
    params: { node, upid: str },
    run: (m, c) => m.taskStatus(c.params.node as string, c.params.upid as string),
  },
  {
    method: 'GET',
    path: '/nodes/{node}/qemu/{vmid}/agent/network-get-interfaces',
    call: 'agentNetworkInterfaces',
    params: { node, vmid },
    run: (m, c) => m.agentNetworkInterfaces(c.params.node as string, Number(c.params.vmid)),
  },
  {
    method: 'POST',
    path: '/nodes/{node}/qemu/{vmid}/agent/exec',
    call: 'agentExec',
    params: {
      node,
      vmid,
      command: { type: 'array' },
      'input-data': { type: 'string', optional: true, maxLength: 64 * 1024 },
    },
    run: (m, c) =>
      m.agentExec(c.params.node as string, Number(c.params.vmid), c.lists.command ?? []),
  },
  {
    method: 'GET',
    path: '/nodes/{node}/qemu/{vmid}/agent/exec-status',
    call: 'agentExecStatus',
    params: { node, vmid, pid: { type: 'integer' } },
    run: (m, c) =>
      m.agentExecStatus(c.params.node as string, Number(c.params.vmid), Number(c.params.pid)),
  },
  {
    method: 'POST',
    path: '/nodes/{node}/qemu/{vmid}/agent/file-write',
    call: 'agentFileWrite',
    params: {
      node,
      vmid,
      file: str,
      content: { type: 'string', maxLength: 60 * 1024 },
      encode: optBool,
    },
    run: (m, c) =>
      m.agentFileWrite(
        c.params.node as string,
        Number(c.params.vmid),
        c.params.file as string,
        c.params.content as string,
        c.params.encode !== '0',
      ),
  },
  {
    method: 'POST',
    path: '/nodes/{node}/storage/{storage}/upload',
    call: 'uploadIso',
    upload: true,
    params: {
      node,
      storage,
      content: { type: 'string', enum: ['iso', 'vztmpl', 'import'] },
      filename: { type: 'string', maxLength: 255 },
      checksum: optStr,
      'checksum-algorithm': {
        type: 'string',
        optional: true,
        enum: ['md5', 'sha1', 'sha224', 'sha256', 'sha384', 'sha512'],
      },
      tmpfilename: { type: 'string', optional: true, pattern: /\/var\/tmp\/pveupload-[0-9a-f]+/ },
    },
    run: (m, c) => {
      if (c.file === undefined) throw new PveError(500, 'missing temporary file name');
      return m.uploadIso(
        c.params.node as string,
        c.params.storage as string,
        c.params.content as string,
        c.params.filename as string,
        c.file.data,
        c.user,
      );
    },
  },
  {
    method: 'DELETE',
    path: '/nodes/{node}/storage/{storage}/content/{volume*}',
    call: 'deleteVolume',
    params: {
      node,
      storage: { ...storage, optional: true },
      volume: str,
      delay: { type: 'integer', optional: true, minimum: 1, maximum: 30 },
    },
    run: (m, c) =>
      m.deleteVolume(c.params.node as string, c.params.storage, c.params.volume as string, c.user),
  },
];

/** The method for `method` and a path under /api2/json (already URL-decoded), with its path parameters. */
export function route(
  method: string,
  relPath: string,
): { endpoint: Endpoint; pathParams: Params } | undefined {
  const comps = relPath.split('/').filter((c) => c !== '');
  for (const e of routes) {
    if (e.method !== method) continue;
    const want = e.path.split('/').filter((c) => c !== '');
    const params: Params = {};
    let ok = true;
    for (let i = 0; i < want.length && ok; i++) {
      const w = want[i] as string;
      const c = comps[i];
      if (c === undefined) ok = false;
      else if (w.endsWith('*}')) {
        params[w.slice(1, -2)] = comps.slice(i).join('/');
        comps.length = want.length;
      } else if (w.startsWith('{')) params[w.slice(1, -1)] = c;
      else if (w !== c) ok = false;
    }
    if (ok && comps.length === want.length) return { endpoint: e, pathParams: params };
  }
  return undefined;
}

/** Whether any method lives at the path (another HTTP method may). */
export function knownPath(relPath: string): boolean {
  return ['GET', 'POST', 'PUT', 'DELETE'].some((m) => route(m, relPath) !== undefined);
}

/**
 * Checks parameters against a method's schema as pve-common's JSONSchema
 * does: a value given both in the path and elsewhere must agree; unknown
 * names, missing ones, wrong types, formats, patterns, lengths, bounds and
 * enumerations are each a field error of one 400.
 */
export function checkParams(
  e: Endpoint,
  pathParams: Params,
  given: GivenParams,
): { params: Params; lists: Record<string, readonly string[]> } {
  const errors: Record<string, string> = {};
  const params: Params = { ...pathParams };
  const lists: Record<string, readonly string[]> = {};
  for (const [k, v] of Object.entries(given)) {
    if (pathParams[k] !== undefined && pathParams[k] !== v) {
      errors[k] = 'duplicate parameter (already defined in URI) with conflicting values!';
    }
    if (e.params[k]?.type === 'array') lists[k] = typeof v === 'string' ? [v] : v;
    else if (typeof v === 'string') params[k] = v;
    else errors[k] = "type check ('string') failed - got ARRAY";
  }
  if (Object.keys(errors).length > 0) throw paramError(errors);
  for (const [k, v] of Object.entries(params)) {
    const p = e.params[k];
    if (p === undefined) {
      errors[k] =
        'property is not defined in schema and the schema does not allow additional properties';
      continue;
    }
    const problem = checkValue(p, v);
    if (problem !== undefined) errors[k] = problem;
  }
  for (const [k, p] of Object.entries(e.params)) {
    if (p.optional !== true && params[k] === undefined && lists[k] === undefined) {
      errors[k] = 'property is missing and it is not optional';
    }
  }
  if (Object.keys(errors).length > 0) throw paramError(errors);
  return { params, lists };
}

function checkValue(p: Param, v: string): string | undefined {
  if (p.type === 'boolean' && v !== '0' && v !== '1')
    return `type check ('boolean') failed - got '${v}'`;
  if (p.type === 'integer' && !/^[+-]?\d+$/.test(v))
    return `type check ('integer') failed - got '${v}'`;
  if (p.type === 'number' && !/^[+-]?(\d+\.\d+|\d+\.|\.\d+|\d+)([eE][+-]?\d+)?$/.test(v)) {
    return `type check ('number') failed - got '${v}'`;
  }
  if (p.format !== undefined) {
    const f = p.format(v);
    if (f !== undefined) return `invalid format - ${f}`;
  }
  if (p.pattern !== undefined && !new RegExp(`^(?:${p.pattern.source})$`).test(v)) {
    return 'value does not match the regex pattern';
  }
  if (p.maxLength !== undefined && v.length > p.maxLength) {
    return `value may only be ${p.maxLength} characters long`;
  }
  if (/^[+-]?(\d+\.\d+|\d+\.|\.\d+|\d+)([eE][+-]?\d+)?$/.test(v)) {
    if (p.maximum !== undefined && Number(v) > p.maximum)
      return `value must have a maximum value of ${p.maximum}`;
    if (p.minimum !== undefined && Number(v) < p.minimum)
      return `value must have a minimum value of ${p.minimum}`;
  }
  if (p.enum !== undefined && !p.enum.includes(v)) {
    return `value '${v}' does not have a value in the enumeration '${p.enum.join(', ')}'`;
  }
  return undefined;
}

/** What the request carried, as both doubles hand it over. */
export interface ApiRequest {
  readonly method: string;
  /** The path under /api2/json, URL-decoded. */
  readonly relPath: string;
  /** Query string and body parameters merged (the query wins, as with pveproxy). */
  readonly params: GivenParams;
  readonly file?: { readonly name: string; readonly data: Uint8Array } | undefined;
  /** The token line from `Authorization: PVEAPIToken=...`, if any. */
  readonly token: string | undefined;
}

/** The seam method a request is for, or `unknown`. */
export function callOf(method: string, relPath: string): string {
  return route(method, relPath)?.endpoint.call ?? 'unknown';
}

/**
 * Serves one request after it has been received whole, in pveproxy's and
 * pvedaemon's order: the token, the method, the parameters given twice,
 * privileges and the node's reachability, then the schema, then the
 * method. Failures are {@link PveError}s.
 */
export async function serve(m: PveModel, req: ApiRequest): Promise<unknown> {
  m.authenticate(req.token);
  const r = route(req.method, req.relPath);
  if (r === undefined) {
    const rel = `/${req.relPath
      .split('/')
      .filter((c) => c !== '')
      .join('/')}`;
    throw new PveError(
      501,
      `Method '${req.method} ${rel}' not implemented`,
      undefined,
      undefined,
      false,
    );
  }
  const node = r.pathParams.node;
  m.check(r.endpoint.call, node);
  const { params, lists } = checkParams(r.endpoint, r.pathParams, req.params);
  return await r.endpoint.run(m, { params, lists, file: req.file, user: m.userOf(req.token) });
}

/** A failure as pveproxy sends it: status, reason phrase, body and its type (a kept answer as kept). */
export function errorAnswer(err: PveError): {
  status: number;
  reason: string;
  body: string;
  contentType: string | undefined;
} {
  const a = err.answer;
  if (a !== undefined) {
    return {
      status: a.status,
      reason: a.reason,
      body: a.body,
      contentType: a.headers['content-type'],
    };
  }
  const json = 'application/json;charset=UTF-8';
  if (err.status === 401) {
    // A careless proxy in front of pveproxy that echoes the credential.
    return {
      status: 401,
      reason: 'authentication failure',
      body: JSON.stringify({ data: null, message: `${err.message}\n` }),
      contentType: json,
    };
  }
  const message = `${err.message}${err.newline ? '\n' : ''}`;
  return {
    status: err.status,
    reason: err.message.split('\n')[0] ?? '',
    body: JSON.stringify({
      data: null,
      message,
      ...(err.errors === undefined ? {} : { errors: err.errors }),
    }),
    contentType: json,
  };
}
