/**
 * Authorization as the real RBAC authorizer decides it: who a request is
 * from, what it does, the roles bound to the user, and the forbidden
 * message.
 *
 * @module
 */
import { isObject, type JsonObject, type JsonValue, strings } from './json.js';
import type { Store } from './store.js';

/** Who a request is from. */
export interface User {
  readonly name: string;
  readonly groups: readonly string[];
  /** The admin token's user: every request is allowed, as `system:masters`. */
  readonly admin: boolean;
}

/** What a request does, as the authorizer sees it (`authorizer.Attributes`). */
export interface Attributes {
  readonly user: User;
  readonly verb: string;
  readonly resourceRequest: boolean;
  readonly group: string;
  readonly resource: string;
  readonly subresource: string;
  readonly namespace: string;
  readonly name: string;
  readonly path: string;
}

/** Non-resource paths every authenticated user may read (`system:discovery`, `system:public-info-viewer`). */
const DISCOVERY = [
  '/api',
  '/api/*',
  '/apis',
  '/apis/*',
  '/openapi',
  '/openapi/*',
  '/version',
  '/version/',
  '/healthz',
  '/livez',
  '/readyz',
];

function arr(v: JsonValue | undefined): JsonValue[] {
  return Array.isArray(v) ? v : [];
}

function matchesPath(patterns: readonly string[], path: string): boolean {
  return patterns.some(
    (p) => p === '*' || p === path || (p.endsWith('*') && path.startsWith(p.slice(0, -1))),
  );
}

function ruleAllows(rule: JsonObject, a: Attributes): boolean {
  const verbs = strings(rule, 'verbs');
  if (!verbs.includes('*') && !verbs.includes(a.verb)) return false;
  if (!a.resourceRequest) return matchesPath(strings(rule, 'nonResourceURLs'), a.path);
  const groups = strings(rule, 'apiGroups');
  if (!groups.includes('*') && !groups.includes(a.group)) return false;
  const resources = strings(rule, 'resources');
  const full = a.subresource === '' ? a.resource : `${a.resource}/${a.subresource}`;
  const resourceOk =
    resources.includes('*') ||
    resources.includes(full) ||
    (a.subresource !== '' &&
      (resources.includes(`${a.resource}/*`) || resources.includes(`*/${a.subresource}`)));
  if (!resourceOk) return false;
  const names = strings(rule, 'resourceNames');
  return names.length === 0 || (a.name !== '' && names.includes(a.name));
}

function subjectMatches(subject: JsonValue, user: User, bindingNamespace: string): boolean {
  if (!isObject(subject)) return false;
  switch (subject.kind) {
    case 'ServiceAccount': {
      const ns =
        typeof subject.namespace === 'string' && subject.namespace !== ''
          ? subject.namespace
          : bindingNamespace;
      return user.name === `system:serviceaccount:${ns}:${String(subject.name)}`;
    }
    case 'User':
      return user.name === subject.name;
    case 'Group':
      return typeof subject.name === 'string' && user.groups.includes(subject.name);
    default:
      return false;
  }
}

function roleRules(store: Store, ref: JsonValue | undefined, namespace: string): JsonValue[] {
  if (!isObject(ref)) return [];
  const name = typeof ref.name === 'string' ? ref.name : '';
  const role =
    ref.kind === 'ClusterRole'
      ? store.get('rbac.authorization.k8s.io/clusterroles', name)
      : ref.kind === 'Role' && namespace !== ''
        ? store.get('rbac.authorization.k8s.io/roles', `${namespace}/${name}`)
        : undefined;
  return role === undefined ? [] : arr(role.rules);
}

/**
 * RBAC as the real authorizer decides: allowed when a rule of a Role or
 * ClusterRole bound to the user (by a RoleBinding in the request's namespace
 * or a ClusterRoleBinding) covers the verb, group, resource (and
 * subresource) and name. Discovery paths are open to every user, as the
 * default `system:discovery` binding makes them.
 */
export function authorize(store: Store, a: Attributes): boolean {
  if (a.user.admin) return true;
  if (!a.resourceRequest && a.verb === 'get' && matchesPath(DISCOVERY, a.path)) return true;
  for (const { object: b } of store.list('rbac.authorization.k8s.io/clusterrolebindings')) {
    if (!arr(b.subjects).some((s) => subjectMatches(s, a.user, ''))) continue;
    if (roleRules(store, b.roleRef, '').some((r) => isObject(r) && ruleAllows(r, a))) return true;
  }
  if (a.namespace !== '' && a.resourceRequest) {
    for (const { object: b } of store.list('rbac.authorization.k8s.io/rolebindings', a.namespace)) {
      if (!arr(b.subjects).some((s) => subjectMatches(s, a.user, a.namespace))) continue;
      if (roleRules(store, b.roleRef, a.namespace).some((r) => isObject(r) && ruleAllows(r, a)))
        return true;
    }
  }
  return false;
}

/** The forbidden message of the real server (`responsewriters.forbiddenMessage`). */
export function forbiddenMessage(a: Attributes): string {
  if (!a.resourceRequest) return `User "${a.user.name}" cannot ${a.verb} path "${a.path}"`;
  const resource = a.subresource === '' ? a.resource : `${a.resource}/${a.subresource}`;
  return a.namespace !== ''
    ? `User "${a.user.name}" cannot ${a.verb} resource "${resource}" in API group "${a.group}" in the namespace "${a.namespace}"`
    : `User "${a.user.name}" cannot ${a.verb} resource "${resource}" in API group "${a.group}" at the cluster scope`;
}
