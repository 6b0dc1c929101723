/**
 * The kinds whose protobuf encoding the server decodes, by apiVersion and
 * kind: the core/v1 and rbac/v1 kinds kubectl's `create` subcommands send.
 *
 * @module
 */
import { CONFIG_MAP, NAMESPACE, SECRET, SERVICE_ACCOUNT } from './core.js';
import type { MessageSchema } from './message.js';
import { CLUSTER_ROLE, CLUSTER_ROLE_BINDING, ROLE, ROLE_BINDING } from './rbac.js';

const RBAC = 'rbac.authorization.k8s.io/v1';

/** apiVersion, kind, schema. */
const KINDS: readonly (readonly [string, string, MessageSchema])[] = [
  ['v1', 'ConfigMap', CONFIG_MAP],
  ['v1', 'Namespace', NAMESPACE],
  ['v1', 'Secret', SECRET],
  ['v1', 'ServiceAccount', SERVICE_ACCOUNT],
  [RBAC, 'ClusterRole', CLUSTER_ROLE],
  [RBAC, 'ClusterRoleBinding', CLUSTER_ROLE_BINDING],
  [RBAC, 'Role', ROLE],
  [RBAC, 'RoleBinding', ROLE_BINDING],
];

/** The schema of a kind whose protobuf encoding the server decodes, if it is one. */
export function protobufSchema(apiVersion: string, kind: string): MessageSchema | undefined {
  return KINDS.find(([v, k]) => v === apiVersion && k === kind)?.[2];
}

/** Every decodable kind as `apiVersion kind` (`v1 ConfigMap`), for messages. */
export function protobufKinds(): string[] {
  return KINDS.map(([v, k]) => `${v} ${k}`);
}
