/**
 * The rbac.authorization.k8s.io/v1 kinds whose protobuf bodies the server
 * decodes, those `kubectl create role|clusterrole|rolebinding|
 * clusterrolebinding` send. Field numbers are those of k8s.io/api
 * `rbac/v1/generated.proto`; JSON names, `omitempty` and pointers those of
 * the Go types (`rules` and a rule's `verbs` have no `omitempty`: an empty
 * list is `null`).
 *
 * @module
 */
import type { FieldSchema, MessageSchema } from './message.js';
import { LABEL_SELECTOR, METADATA_FIELD } from './meta.js';

/** `PolicyRule`. */
const POLICY_RULE: MessageSchema = {
  name: 'PolicyRule',
  fields: [
    { number: 1, json: 'verbs', go: 'Verbs', type: 'string', repeated: true, always: true },
    { number: 2, json: 'apiGroups', go: 'APIGroups', type: 'string', repeated: true },
    { number: 3, json: 'resources', go: 'Resources', type: 'string', repeated: true },
    { number: 4, json: 'resourceNames', go: 'ResourceNames', type: 'string', repeated: true },
    { number: 5, json: 'nonResourceURLs', go: 'NonResourceURLs', type: 'string', repeated: true },
  ],
};

const RULES: FieldSchema = {
  number: 2,
  json: 'rules',
  go: 'Rules',
  type: { message: POLICY_RULE },
  repeated: true,
  always: true,
};

/** `Subject` (kind and name written even when empty). */
const SUBJECT: MessageSchema = {
  name: 'Subject',
  fields: [
    { number: 1, json: 'kind', go: 'Kind', type: 'string', always: true },
    { number: 2, json: 'apiGroup', go: 'APIGroup', type: 'string' },
    { number: 3, json: 'name', go: 'Name', type: 'string', always: true },
    { number: 4, json: 'namespace', go: 'Namespace', type: 'string' },
  ],
};

/** `RoleRef` (every field written even when empty). */
const ROLE_REF: MessageSchema = {
  name: 'RoleRef',
  fields: [
    { number: 1, json: 'apiGroup', go: 'APIGroup', type: 'string', always: true },
    { number: 2, json: 'kind', go: 'Kind', type: 'string', always: true },
    { number: 3, json: 'name', go: 'Name', type: 'string', always: true },
  ],
};

/** `Role`. */
export const ROLE: MessageSchema = { name: 'Role', fields: [METADATA_FIELD, RULES] };

/** `ClusterRole`. */
export const CLUSTER_ROLE: MessageSchema = {
  name: 'ClusterRole',
  fields: [
    METADATA_FIELD,
    RULES,
    {
      number: 3,
      json: 'aggregationRule',
      go: 'AggregationRule',
      pointer: true,
      type: {
        message: {
          name: 'AggregationRule',
          fields: [
            {
              number: 1,
              json: 'clusterRoleSelectors',
              go: 'ClusterRoleSelectors',
              type: { message: LABEL_SELECTOR },
              repeated: true,
            },
          ],
        },
      },
    },
  ],
};

const BINDING_FIELDS: readonly FieldSchema[] = [
  METADATA_FIELD,
  { number: 2, json: 'subjects', go: 'Subjects', type: { message: SUBJECT }, repeated: true },
  { number: 3, json: 'roleRef', go: 'RoleRef', type: { message: ROLE_REF } },
];

/** `RoleBinding`. */
export const ROLE_BINDING: MessageSchema = { name: 'RoleBinding', fields: BINDING_FIELDS };

/** `ClusterRoleBinding`. */
export const CLUSTER_ROLE_BINDING: MessageSchema = {
  name: 'ClusterRoleBinding',
  fields: BINDING_FIELDS,
};
