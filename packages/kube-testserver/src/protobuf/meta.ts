/**
 * The apimachinery messages: `runtime.TypeMeta` and `runtime.Unknown`
 * (the envelope of a protobuf body), and meta/v1's `ObjectMeta` (with
 * `OwnerReference` and `ManagedFieldsEntry`), which every object carries,
 * and `LabelSelector`. Field numbers are those of apimachinery's
 * `pkg/runtime/generated.proto` and `pkg/apis/meta/v1/generated.proto`;
 * JSON names, `omitempty` and pointers those of the Go types.
 *
 * @module
 */
import type { FieldSchema, MessageSchema } from './message.js';

/** `runtime.TypeMeta`: the envelope's apiVersion and kind. */
export const TYPE_META: MessageSchema = {
  name: 'TypeMeta',
  fields: [
    { number: 1, json: 'apiVersion', go: 'APIVersion', type: 'string' },
    { number: 2, json: 'kind', go: 'Kind', type: 'string' },
  ],
};

/** `runtime.Unknown`: the type, and the object's own encoding in `raw`. */
export const UNKNOWN: MessageSchema = {
  name: 'Unknown',
  fields: [
    { number: 1, json: 'typeMeta', go: 'TypeMeta', type: { message: TYPE_META } },
    { number: 2, json: 'raw', go: 'Raw', type: 'bytes' },
    { number: 3, json: 'contentEncoding', go: 'ContentEncoding', type: 'string' },
    { number: 4, json: 'contentType', go: 'ContentType', type: 'string' },
  ],
};

/** meta/v1 `OwnerReference` (its four names written even when empty). */
export const OWNER_REFERENCE: MessageSchema = {
  name: 'OwnerReference',
  fields: [
    { number: 5, json: 'apiVersion', go: 'APIVersion', type: 'string', always: true },
    { number: 1, json: 'kind', go: 'Kind', type: 'string', always: true },
    { number: 3, json: 'name', go: 'Name', type: 'string', always: true },
    { number: 4, json: 'uid', go: 'UID', type: 'string', always: true },
    { number: 6, json: 'controller', go: 'Controller', type: 'bool', pointer: true },
    {
      number: 7,
      json: 'blockOwnerDeletion',
      go: 'BlockOwnerDeletion',
      type: 'bool',
      pointer: true,
    },
  ],
};

/** meta/v1 `ManagedFieldsEntry`. */
export const MANAGED_FIELDS_ENTRY: MessageSchema = {
  name: 'ManagedFieldsEntry',
  fields: [
    { number: 1, json: 'manager', go: 'Manager', type: 'string' },
    { number: 2, json: 'operation', go: 'Operation', type: 'string' },
    { number: 3, json: 'apiVersion', go: 'APIVersion', type: 'string' },
    { number: 4, json: 'time', go: 'Time', type: 'time', pointer: true },
    { number: 6, json: 'fieldsType', go: 'FieldsType', type: 'string' },
    { number: 7, json: 'fieldsV1', go: 'FieldsV1', type: 'fieldsV1', pointer: true },
    { number: 8, json: 'subresource', go: 'Subresource', type: 'string' },
  ],
};

/** meta/v1 `ObjectMeta` (field 15, the tombstoned clusterName, is skipped as unknown). */
export const OBJECT_META: MessageSchema = {
  name: 'ObjectMeta',
  fields: [
    { number: 1, json: 'name', go: 'Name', type: 'string' },
    { number: 2, json: 'generateName', go: 'GenerateName', type: 'string' },
    { number: 3, json: 'namespace', go: 'Namespace', type: 'string' },
    { number: 4, json: 'selfLink', go: 'SelfLink', type: 'string' },
    { number: 5, json: 'uid', go: 'UID', type: 'string' },
    { number: 6, json: 'resourceVersion', go: 'ResourceVersion', type: 'string' },
    { number: 7, json: 'generation', go: 'Generation', type: 'int64' },
    { number: 8, json: 'creationTimestamp', go: 'CreationTimestamp', type: 'time' },
    {
      number: 9,
      json: 'deletionTimestamp',
      go: 'DeletionTimestamp',
      type: 'time',
      pointer: true,
    },
    {
      number: 10,
      json: 'deletionGracePeriodSeconds',
      go: 'DeletionGracePeriodSeconds',
      type: 'int64',
      pointer: true,
    },
    { number: 11, json: 'labels', go: 'Labels', type: { map: 'string' } },
    { number: 12, json: 'annotations', go: 'Annotations', type: { map: 'string' } },
    {
      number: 13,
      json: 'ownerReferences',
      go: 'OwnerReferences',
      type: { message: OWNER_REFERENCE },
      repeated: true,
    },
    { number: 14, json: 'finalizers', go: 'Finalizers', type: 'string', repeated: true },
    {
      number: 17,
      json: 'managedFields',
      go: 'ManagedFields',
      type: { message: MANAGED_FIELDS_ENTRY },
      repeated: true,
    },
  ],
};

/** Field 1 of every object: its `metadata`. */
export const METADATA_FIELD: FieldSchema = {
  number: 1,
  json: 'metadata',
  go: 'ObjectMeta',
  type: { message: OBJECT_META },
};

/** meta/v1 `LabelSelectorRequirement` (key and operator written even when empty). */
const LABEL_SELECTOR_REQUIREMENT: MessageSchema = {
  name: 'LabelSelectorRequirement',
  fields: [
    { number: 1, json: 'key', go: 'Key', type: 'string', always: true },
    { number: 2, json: 'operator', go: 'Operator', type: 'string', always: true },
    { number: 3, json: 'values', go: 'Values', type: 'string', repeated: true },
  ],
};

/** meta/v1 `LabelSelector`. */
export const LABEL_SELECTOR: MessageSchema = {
  name: 'LabelSelector',
  fields: [
    { number: 1, json: 'matchLabels', go: 'MatchLabels', type: { map: 'string' } },
    {
      number: 2,
      json: 'matchExpressions',
      go: 'MatchExpressions',
      type: { message: LABEL_SELECTOR_REQUIREMENT },
      repeated: true,
    },
  ],
};
