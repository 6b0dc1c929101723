// Peer: none (the protobuf wire reader and schemas, in-process). Byte fixtures are kubectl 1.32's
// request bodies (protobuf-fixtures.ts) and hand-laid messages, commented field by field.
import { describe, expect, it } from 'vitest';
import { CONFIG_MAP, NAMESPACE, SECRET, SERVICE_ACCOUNT } from '../src/protobuf/core.js';
import { decodeObject, readEnvelope } from '../src/protobuf/envelope.js';
import { decodeMessage, type MessageSchema, toJson } from '../src/protobuf/message.js';
import { OBJECT_META } from '../src/protobuf/meta.js';
import { CLUSTER_ROLE, ROLE, ROLE_BINDING } from '../src/protobuf/rbac.js';
import { WireError, WireReader, WireType } from '../src/protobuf/wire.js';
import {
  CONFIGMAP_X,
  CONFIGMAP_X_JSON,
  hex,
  NAMESPACE_PROBE,
  NAMESPACE_PROBE_JSON,
  ROLE_R,
  ROLE_R_JSON,
  SECRET_S,
  SECRET_S_JSON,
  SERVICEACCOUNT_SA,
  SERVICEACCOUNT_SA_JSON,
} from './protobuf-fixtures.js';

const reader = (s: string) => new WireReader(hex(s));

/** Decodes an object the way a request body is: envelope, then the kind's schema. */
function decodeBody(body: Uint8Array, schema: MessageSchema) {
  const e = readEnvelope(body);
  return decodeObject(schema, e.apiVersion, e.kind, e.raw);
}

/** A one-field message to read fields against. */
const NAMED: MessageSchema = {
  name: 'Named',
  fields: [{ number: 1, json: 'name', go: 'Name', type: 'string' }],
};

describe('the wire reader', () => {
  it('reads varints of one to ten bytes, dropping bits past the 64th', () => {
    expect(reader('00').varint()).toBe(0n);
    expect(reader('7f').varint()).toBe(127n);
    expect(
      reader(
        'ac 02', // 0x2c | 0x02 << 7 = 300
      ).varint(),
    ).toBe(300n);
    expect(
      reader(
        'ffffffff ffffffff ff' + // nine bytes of seven 1-bits each: 63 bits
          '01', // the 64th bit
      ).varint(),
    ).toBe(2n ** 64n - 1n);
    expect(
      reader(
        'ffffffff ffffffff ff' + // 63 bits
          '7f', // bits 64-70: past 64, dropped as Go drops them
      ).varint(),
    ).toBe(2n ** 64n - 1n);
  });

  it('refuses an eleven-byte varint and one cut short', () => {
    expect(() =>
      reader(
        'ffffffff ffffffff ffff' + // ten bytes, each saying another follows
          '01', // an eleventh
      ).varint(),
    ).toThrow(new WireError('proto: integer overflow'));
    expect(() =>
      reader(
        'ac', // a continuation bit, then the end
      ).varint(),
    ).toThrow(new WireError('unexpected EOF'));
  });

  it('reads tags and refuses an end-group tag outside a group and field number 0', () => {
    expect(
      reader(
        '0a', // field 1, wire type 2
      ).tag('M'),
    ).toEqual({ field: 1, wireType: WireType.LengthDelimited });
    expect(
      reader(
        '8801', // 0x88 0x01 = 136: field 17, wire type 0
      ).tag('M'),
    ).toEqual({ field: 17, wireType: WireType.Varint });
    expect(() =>
      reader(
        '0c', // field 1, wire type 4 (end group)
      ).tag('ObjectMeta'),
    ).toThrow(new WireError('proto: ObjectMeta: wiretype end group for non-group'));
    expect(() =>
      reader(
        '02', // field 0, wire type 2: Go prints the whole tag as the "wire type"
      ).tag('Unknown'),
    ).toThrow(new WireError('proto: Unknown: illegal tag 0 (wire type 2)'));
  });

  it('reads a length-delimited payload, and refuses one that runs past the end or is negative', () => {
    const r = reader(
      '03 616263' + // length 3, "abc"
        '00', // length 0
    );
    expect(Buffer.from(r.bytes()).toString()).toBe('abc');
    expect(r.bytes().length).toBe(0);
    expect(r.done).toBe(true);
    expect(() =>
      reader(
        '05 6162', // length 5, two bytes left
      ).bytes(),
    ).toThrow(new WireError('unexpected EOF'));
    expect(() =>
      reader(
        'ffffffff ffffffff ff01', // length 2^64-1: -1 as a Go int
      ).bytes(),
    ).toThrow(new WireError('proto: negative length found during unmarshaling'));
  });
});

describe('message decoding', () => {
  it('skips unknown fields of every wire type, groups included', () => {
    const bytes = hex(
      '10 96 01' + // field 2, varint 150 (unknown)
        '19 0102030405060708' + // field 3, fixed64 (unknown)
        '22 02 6869' + // field 4, length 2 "hi" (unknown)
        '2b' + // field 5, start group (unknown)
        '08 01' + //   field 1 inside the group, varint 1
        '13 0a01 78 14' + //   field 2, a nested group with a field in it, its end
        '2c' + // field 5, end group
        '35 01020304' + // field 6, fixed32 (unknown)
        '0a 02 6f6b', // field 1 name "ok" (known)
    );
    expect(toJson(NAMED, decodeMessage(NAMED, bytes))).toEqual({ name: 'ok' });
  });

  it('refuses an unknown field of wire type 6 or 7, and a known field of the wrong wire type', () => {
    expect(() =>
      decodeMessage(
        NAMED,
        hex(
          '16', // field 2, wire type 6 (no such type)
        ),
      ),
    ).toThrow(new WireError('proto: illegal wireType 6'));
    expect(() =>
      decodeMessage(
        NAMED,
        hex(
          '08 01', // field 1 (name, a string) as a varint
        ),
      ),
    ).toThrow(new WireError('proto: wrong wireType = 0 for field Name'));
  });

  it('refuses a truncated message: a payload, a skipped field or a group cut short', () => {
    for (const body of [
      '0a 05 616263', // name, length 5, three bytes
      '19 01020304', // unknown fixed64, four bytes
      '2b 08 01', // unknown group, never ended
    ])
      expect(() => decodeMessage(NAMED, hex(body)), body).toThrow(new WireError('unexpected EOF'));
  });

  it('decodes ObjectMeta as Go marshals it: pointers kept when zero, omitempty otherwise, maps and lists', () => {
    const meta = hex(
      '0a 01 61' + // 1 name "a"
        '12 02 622d' + // 2 generateName "b-"
        '38 00' + // 7 generation 0 (omitted: omitempty)
        '42 06 08 d2 85 d8 cc 04' + // 8 creationTimestamp: seconds 1234567890 (nanos absent)
        '50 00' + // 10 deletionGracePeriodSeconds 0 (kept: a pointer)
        '5a 0a 0a 03 617070 12 03 776562' + // 11 labels entry app=web
        '5a 06 0a 01 6b 12 01 31' + // 11 labels entry k=1
        '62 07 0a 05 6e6f746573' + // 12 annotations entry notes="" (no value field)
        '6a 16' + // 13 ownerReferences entry, 22 bytes
        '2a 02 7631' + //   5 apiVersion "v1"
        '0a 09 436f6e6669674d6170' + //   1 kind "ConfigMap"
        '1a 01 6f' + //   3 name "o"
        '30 01' + //   6 controller true (uid absent: written "", no omitempty)
        '38 00' + //   7 blockOwnerDeletion false (kept: a pointer)
        '72 06 782e696f2f66' + // 14 finalizers "x.io/f"
        '8a01 31' + // 17 managedFields entry, 49 bytes
        '0a 07 6b75626563746c' + //   1 manager "kubectl"
        '12 06 557064617465' + //   2 operation "Update"
        '22 06 08 d2 85 d8 cc 04' + //   4 time: seconds 1234567890
        '32 08 4669656c64735631' + //   6 fieldsType "FieldsV1"
        '3a 0c 0a 0a 7b22663a78223a7b7d7d' + //   7 fieldsV1, 12 bytes: 1 Raw {"f:x":{}}
        '7a 03 787878', // 15 the tombstoned clusterName "xxx": unknown, skipped
    );
    expect(toJson(OBJECT_META, decodeMessage(OBJECT_META, meta))).toEqual({
      name: 'a',
      generateName: 'b-',
      creationTimestamp: '2009-02-13T23:31:30Z',
      deletionGracePeriodSeconds: 0,
      labels: { app: 'web', k: '1' },
      annotations: { notes: '' },
      ownerReferences: [
        {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          name: 'o',
          uid: '',
          controller: true,
          blockOwnerDeletion: false,
        },
      ],
      finalizers: ['x.io/f'],
      managedFields: [
        {
          manager: 'kubectl',
          operation: 'Update',
          time: '2009-02-13T23:31:30Z',
          fieldsType: 'FieldsV1',
          fieldsV1: { 'f:x': {} },
        },
      ],
    });
  });

  it('writes absent structs as Go does (spec {}, a zero creationTimestamp null) and merges a repeated message field', () => {
    expect(toJson(NAMESPACE, decodeMessage(NAMESPACE, hex('')))).toEqual({
      metadata: { creationTimestamp: null },
      spec: {},
      status: {},
    });
    const twice = hex(
      '0a 03 0a01 61' + // 1 metadata: name "a"
        '0a 05 72 03 782f79', // 1 metadata again: finalizers "x/y" (merged into the first)
    );
    expect(toJson(NAMESPACE, decodeMessage(NAMESPACE, twice)).metadata).toEqual({
      name: 'a',
      creationTimestamp: null,
      finalizers: ['x/y'],
    });
  });

  it('keeps a map key named __proto__ as a key', () => {
    const cm = toJson(
      CONFIG_MAP,
      decodeMessage(
        CONFIG_MAP,
        hex(
          '12 0f' + // 2 data entry, 15 bytes
            '0a 09 5f5f70726f746f5f5f' + //   1 key "__proto__"
            '12 02 7b7d', //   2 value "{}"
        ),
      ),
    );
    expect(Object.keys(cm.data ?? {})).toEqual(['__proto__']);
    expect(JSON.stringify(cm.data)).toBe('{"__proto__":"{}"}');
  });

  it('keeps immutable: false of a ConfigMap and a Secret (pointers), and the Secret type and stringData', () => {
    expect(
      toJson(
        CONFIG_MAP,
        decodeMessage(
          CONFIG_MAP,
          hex(
            '20 00', // 4 immutable false
          ),
        ),
      ),
    ).toEqual({ metadata: { creationTimestamp: null }, immutable: false });
    expect(
      toJson(
        SECRET,
        decodeMessage(
          SECRET,
          hex(
            '28 01' + // 5 immutable true
              '22 07 0a01 6b 1202 7676' + // 4 stringData entry k="vv"
              '1a 13 6b756265726e657465732e696f2f6261736963' + // 3 type "kubernetes.io/basic"
              '12 05 0a01 62 1200', // 2 data entry b=(empty bytes)
          ),
        ),
      ),
    ).toEqual({
      metadata: { creationTimestamp: null },
      immutable: true,
      data: { b: '' },
      stringData: { k: 'vv' },
      type: 'kubernetes.io/basic',
    });
  });
});

describe('rbac/v1 schemas', () => {
  it('write an empty rules list as null (no omitempty), a pointer aggregationRule when present, and roleRef always', () => {
    expect(
      toJson(
        CLUSTER_ROLE,
        decodeMessage(
          CLUSTER_ROLE,
          hex(
            '1a 0a' + // 3 aggregationRule, 10 bytes
              '0a 08' + //   1 clusterRoleSelectors entry, 8 bytes
              '0a 06 0a01 61 1201 62', //     1 matchLabels entry a=b
          ),
        ),
      ),
    ).toEqual({
      metadata: { creationTimestamp: null },
      rules: null,
      aggregationRule: { clusterRoleSelectors: [{ matchLabels: { a: 'b' } }] },
    });
    expect(
      toJson(
        ROLE_BINDING,
        decodeMessage(
          ROLE_BINDING,
          hex(
            '12 06' + // 2 subjects entry, 6 bytes
              '0a 04 55736572', //   1 kind "User" (name absent: written "", no omitempty)
          ),
        ),
      ),
    ).toEqual({
      metadata: { creationTimestamp: null },
      subjects: [{ kind: 'User', name: '' }],
      roleRef: { apiGroup: '', kind: '', name: '' },
    });
  });
});

describe('kubectl 1.32 bodies', () => {
  it('decode to the JSON kubectl prints for the same objects', () => {
    expect(decodeBody(NAMESPACE_PROBE, NAMESPACE)).toEqual(NAMESPACE_PROBE_JSON);
    expect(decodeBody(CONFIGMAP_X, CONFIG_MAP)).toEqual(CONFIGMAP_X_JSON);
    expect(decodeBody(SECRET_S, SECRET)).toEqual(SECRET_S_JSON);
    expect(decodeBody(SERVICEACCOUNT_SA, SERVICE_ACCOUNT)).toEqual(SERVICEACCOUNT_SA_JSON);
    expect(decodeBody(ROLE_R, ROLE)).toEqual(ROLE_R_JSON);
  });

  it('read the envelope, and refuse what the serializer refuses', () => {
    expect(readEnvelope(SERVICEACCOUNT_SA)).toEqual({
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      raw: expect.any(Uint8Array),
      contentEncoding: '',
      contentType: '',
    });
    expect(() => readEnvelope(hex(''))).toThrow(new WireError('empty data'));
    expect(() =>
      readEnvelope(
        hex(
          '7b7d', // "{}": JSON, no magic
        ),
      ),
    ).toThrow(
      new WireError(
        'provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]',
      ),
    );
    expect(() =>
      readEnvelope(
        hex(
          '6b387300', // the magic and nothing after it
        ),
      ),
    ).toThrow(new WireError('empty body'));
    expect(() => readEnvelope(NAMESPACE_PROBE.subarray(0, 30)), 'truncated').toThrow(
      new WireError('unexpected EOF'),
    );
  });

  it('refuse an object whose own bytes are truncated inside an intact envelope', () => {
    const body = hex(
      '6b387300' + // k8s\0
        '0a0f 0a02 7631 1209 4e616d657370616365' + // 1 typeMeta: v1 Namespace
        '1204' + // 2 raw, 4 bytes:
        '0a05 0a03', //   1 metadata, length 5, only 2 bytes follow
    );
    const e = readEnvelope(body);
    expect(() => decodeObject(NAMESPACE, e.apiVersion, e.kind, e.raw)).toThrow(
      new WireError('unexpected EOF'),
    );
  });
});
