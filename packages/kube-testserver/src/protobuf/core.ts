/**
 * The core/v1 kinds whose protobuf bodies the server decodes, those
 * kubectl's `create` subcommands send: Namespace, ConfigMap, Secret and
 * ServiceAccount (the rbac/v1 kinds are in rbac.ts, the lookup by kind in
 * kinds.ts). Field numbers are those of k8s.io/api
 * `core/v1/generated.proto`; JSON names, `omitempty` and pointers those of
 * the Go types.
 *
 * @module
 */
import type { MessageSchema } from './message.js';
import { METADATA_FIELD } from './meta.js';

/** `NamespaceCondition` (its type and status written even when empty). */
const NAMESPACE_CONDITION: MessageSchema = {
  name: 'NamespaceCondition',
  fields: [
    { number: 1, json: 'type', go: 'Type', type: 'string', always: true },
    { number: 2, json: 'status', go: 'Status', type: 'string', always: true },
    { number: 4, json: 'lastTransitionTime', go: 'LastTransitionTime', type: 'time' },
    { number: 5, json: 'reason', go: 'Reason', type: 'string' },
    { number: 6, json: 'message', go: 'Message', type: 'string' },
  ],
};

/** core/v1 `Namespace`. */
export const NAMESPACE: MessageSchema = {
  name: 'Namespace',
  fields: [
    METADATA_FIELD,
    {
      number: 2,
      json: 'spec',
      go: 'Spec',
      type: {
        message: {
          name: 'NamespaceSpec',
          fields: [
            { number: 1, json: 'finalizers', go: 'Finalizers', type: 'string', repeated: true },
          ],
        },
      },
    },
    {
      number: 3,
      json: 'status',
      go: 'Status',
      type: {
        message: {
          name: 'NamespaceStatus',
          fields: [
            { number: 1, json: 'phase', go: 'Phase', type: 'string' },
            {
              number: 2,
              json: 'conditions',
              go: 'Conditions',
              type: { message: NAMESPACE_CONDITION },
              repeated: true,
            },
          ],
        },
      },
    },
  ],
};

/** core/v1 `ConfigMap`. */
export const CONFIG_MAP: MessageSchema = {
  name: 'ConfigMap',
  fields: [
    METADATA_FIELD,
    { number: 4, json: 'immutable', go: 'Immutable', type: 'bool', pointer: true },
    { number: 2, json: 'data', go: 'Data', type: { map: 'string' } },
    { number: 3, json: 'binaryData', go: 'BinaryData', type: { map: 'bytes' } },
  ],
};

/** core/v1 `Secret` (`data` as base64 in JSON, as `[]byte` marshals). */
export const SECRET: MessageSchema = {
  name: 'Secret',
  fields: [
    METADATA_FIELD,
    { number: 5, json: 'immutable', go: 'Immutable', type: 'bool', pointer: true },
    { number: 2, json: 'data', go: 'Data', type: { map: 'bytes' } },
    { number: 4, json: 'stringData', go: 'StringData', type: { map: 'string' } },
    { number: 3, json: 'type', go: 'Type', type: 'string' },
  ],
};

/** core/v1 `ObjectReference`. */
const OBJECT_REFERENCE: MessageSchema = {
  name: 'ObjectReference',
  fields: [
    { number: 1, json: 'kind', go: 'Kind', type: 'string' },
    { number: 2, json: 'namespace', go: 'Namespace', type: 'string' },
    { number: 3, json: 'name', go: 'Name', type: 'string' },
    { number: 4, json: 'uid', go: 'UID', type: 'string' },
    { number: 5, json: 'apiVersion', go: 'APIVersion', type: 'string' },
    { number: 6, json: 'resourceVersion', go: 'ResourceVersion', type: 'string' },
    { number: 7, json: 'fieldPath', go: 'FieldPath', type: 'string' },
  ],
};

/** core/v1 `LocalObjectReference`. */
const LOCAL_OBJECT_REFERENCE: MessageSchema = {
  name: 'LocalObjectReference',
  fields: [{ number: 1, json: 'name', go: 'Name', type: 'string' }],
};

/** core/v1 `ServiceAccount`. */
export const SERVICE_ACCOUNT: MessageSchema = {
  name: 'ServiceAccount',
  fields: [
    METADATA_FIELD,
    {
      number: 2,
      json: 'secrets',
      go: 'Secrets',
      type: { message: OBJECT_REFERENCE },
      repeated: true,
    },
    {
      number: 3,
      json: 'imagePullSecrets',
      go: 'ImagePullSecrets',
      type: { message: LOCAL_OBJECT_REFERENCE },
      repeated: true,
    },
    {
      number: 4,
      json: 'automountServiceAccountToken',
      go: 'AutomountServiceAccountToken',
      type: 'bool',
      pointer: true,
    },
  ],
};
