// Protobuf request bodies as kubectl 1.32 sends them (read from `kubectl -v=9`),
// commented field by field, with the JSON that `kubectl create ... --dry-run=client -o json`
// prints for the same object (what Go's encoding/json writes for it).

/** Bytes from hex, spaces ignored. */
export const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ''), 'hex');

/** The envelope's start: `k8s\0`. */
const MAGIC = '6b387300';

/** ObjectMeta as kubectl writes it: every plain field, empty, after the name. */
const EMPTY_META_TAIL =
  '1200' + // 2 generateName ""
  '1a00' + // 3 namespace ""
  '2200' + // 4 selfLink ""
  '2a00' + // 5 uid ""
  '3200' + // 6 resourceVersion ""
  '3800' + // 7 generation: varint 0
  '4200'; // 8 creationTimestamp: zero Time (empty)

/** The Unknown's last two fields as kubectl writes them. */
const ENVELOPE_TAIL =
  '1a00' + // 3 contentEncoding ""
  '2200'; // 4 contentType ""

/** `kubectl create namespace probe`. */
export const NAMESPACE_PROBE = hex(
  MAGIC +
    '0a0f' + // Unknown 1 typeMeta, 15 bytes
    '0a02 7631' + //   1 apiVersion "v1"
    '1209 4e616d657370616365' + //   2 kind "Namespace"
    '121d' + // Unknown 2 raw, 29 bytes: the Namespace
    '0a15' + //   1 metadata, 21 bytes
    '0a05 70726f6265' + //     1 name "probe"
    EMPTY_META_TAIL +
    '1200' + //   2 spec: empty
    '1a02' + //   3 status, 2 bytes
    '0a00' + //     1 phase ""
    ENVELOPE_TAIL,
);

/** What kubectl prints for the same Namespace with `--dry-run=client -o json`. */
export const NAMESPACE_PROBE_JSON = {
  kind: 'Namespace',
  apiVersion: 'v1',
  metadata: { name: 'probe', creationTimestamp: null },
  spec: {},
  status: {},
};

/** `kubectl create configmap x --from-literal=a=b --from-file=app.conf --from-file=blob.bin`. */
export const CONFIGMAP_X = hex(
  MAGIC +
    '0a0f' + // Unknown 1 typeMeta, 15 bytes
    '0a02 7631' + //   1 apiVersion "v1"
    '1209 436f6e6669674d6170' + //   2 kind "ConfigMap"
    '123e' + // Unknown 2 raw, 62 bytes: the ConfigMap
    '0a11' + //   1 metadata, 17 bytes
    '0a01 78' + //     1 name "x"
    EMPTY_META_TAIL +
    '1206' + //   2 data entry, 6 bytes
    '0a01 61' + //     1 key "a"
    '1201 62' + //     2 value "b"
    '1210' + //   2 data entry, 16 bytes
    '0a08 6170702e636f6e66' + //     1 key "app.conf"
    '1204 783d310a' + //     2 value "x=1\n"
    '1a0f' + //   3 binaryData entry, 15 bytes
    '0a08 626c6f622e62696e' + //     1 key "blob.bin"
    '1203 ff00fe' + //     2 value: bytes ff 00 fe
    ENVELOPE_TAIL,
);

/** What kubectl prints for the same ConfigMap with `--dry-run=client -o json`. */
export const CONFIGMAP_X_JSON = {
  kind: 'ConfigMap',
  apiVersion: 'v1',
  metadata: { name: 'x', creationTimestamp: null },
  data: { a: 'b', 'app.conf': 'x=1\n' },
  binaryData: { 'blob.bin': '/wD+' },
};

/** `kubectl create secret generic s --from-literal=password=not-a-real-password`. */
export const SECRET_S = hex(
  MAGIC +
    '0a0c' + // Unknown 1 typeMeta, 12 bytes
    '0a02 7631' + //   1 apiVersion "v1"
    '1206 536563726574' + //   2 kind "Secret"
    '1236' + // Unknown 2 raw, 54 bytes: the Secret
    '0a11' + //   1 metadata, 17 bytes
    '0a01 73' + //     1 name "s"
    EMPTY_META_TAIL +
    '121f' + //   2 data entry, 31 bytes
    '0a08 70617373776f7264' + //     1 key "password"
    '1213 6e6f742d612d7265616c2d70617373776f7264' + //     2 value: bytes "not-a-real-password"
    '1a00' + //   3 type ""
    ENVELOPE_TAIL,
);

/** What kubectl prints for the same Secret with `--dry-run=client -o json`. */
export const SECRET_S_JSON = {
  kind: 'Secret',
  apiVersion: 'v1',
  metadata: { name: 's', creationTimestamp: null },
  data: { password: 'bm90LWEtcmVhbC1wYXNzd29yZA==' },
};

/** `kubectl create serviceaccount sa`. */
export const SERVICEACCOUNT_SA = hex(
  MAGIC +
    '0a14' + // Unknown 1 typeMeta, 20 bytes
    '0a02 7631' + //   1 apiVersion "v1"
    '120e 536572766963654163636f756e74' + //   2 kind "ServiceAccount"
    '1214' + // Unknown 2 raw, 20 bytes: the ServiceAccount
    '0a12' + //   1 metadata, 18 bytes
    '0a02 7361' + //     1 name "sa"
    EMPTY_META_TAIL +
    ENVELOPE_TAIL,
);

/** What kubectl prints for the same ServiceAccount with `--dry-run=client -o json`. */
export const SERVICEACCOUNT_SA_JSON = {
  kind: 'ServiceAccount',
  apiVersion: 'v1',
  metadata: { name: 'sa', creationTimestamp: null },
};

/** `kubectl create role r --verb=get,list --resource=pods,configmaps --resource-name=x`. */
export const ROLE_R = hex(
  MAGIC +
    '0a24' + // Unknown 1 typeMeta, 36 bytes
    '0a1c 726261632e617574686f72697a6174696f6e2e6b38732e696f2f7631' + //   1 apiVersion "rbac.authorization.k8s.io/v1"
    '1204 526f6c65' + //   2 kind "Role"
    '1237' + // Unknown 2 raw, 55 bytes: the Role
    '0a11' + //   1 metadata, 17 bytes
    '0a01 72' + //     1 name "r"
    EMPTY_META_TAIL +
    '1222' + //   2 rules entry, 34 bytes
    '0a03 676574' + //     1 verbs "get"
    '0a04 6c697374' + //     1 verbs "list"
    '1200' + //     2 apiGroups "" (the core group)
    '1a04 706f6473' + //     3 resources "pods"
    '1a0a 636f6e6669676d617073' + //     3 resources "configmaps"
    '2201 78' + //     4 resourceNames "x"
    ENVELOPE_TAIL,
);

/** What kubectl prints for the same Role with `--dry-run=client -o json`. */
export const ROLE_R_JSON = {
  kind: 'Role',
  apiVersion: 'rbac.authorization.k8s.io/v1',
  metadata: { name: 'r', creationTimestamp: null },
  rules: [
    {
      verbs: ['get', 'list'],
      apiGroups: [''],
      resources: ['pods', 'configmaps'],
      resourceNames: ['x'],
    },
  ],
};
