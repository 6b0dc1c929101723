/**
 * Name and object metadata checks common to every resource, in
 * apimachinery's words: DNS-1123 subdomains and labels, path segment
 * names, `ValidateObjectMeta`.
 *
 * @module
 */
import { type FieldError, fieldInvalid, fieldRequired } from './errors.js';
import { isObject, type JsonObject } from './json.js';

const LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const QUALIFIED_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

/** Errors for a DNS-1123 subdomain (most object names), as apimachinery's `IsDNS1123Subdomain`. */
export function dns1123Subdomain(value: string): string[] {
  const errs: string[] = [];
  if (value.length > 253) errs.push('must be no more than 253 characters');
  if (!SUBDOMAIN.test(value))
    errs.push(
      "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
    );
  return errs;
}

/** Errors for a DNS-1123 label (namespaces, services), as `IsDNS1123Label`. */
export function dns1123Label(value: string): string[] {
  const errs: string[] = [];
  if (value.length > 63) errs.push('must be no more than 63 characters');
  if (!LABEL.test(value))
    errs.push(
      "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
    );
  return errs;
}

/** Errors for a name that is only a path segment (custom resources). */
export function pathSegmentName(value: string): string[] {
  if (value === '.' || value === '..') return [`may not be '${value}'`];
  for (const bad of ['/', '%']) if (value.includes(bad)) return [`may not contain '${bad}'`];
  return [];
}

function labelErrors(field: string, labels: unknown): FieldError[] {
  if (!isObject(labels)) return [];
  const out: FieldError[] = [];
  for (const [k, v] of Object.entries(labels)) {
    const slash = k.lastIndexOf('/');
    const name = slash < 0 ? k : k.slice(slash + 1);
    const prefix = slash < 0 ? '' : k.slice(0, slash);
    if (
      name.length === 0 ||
      name.length > 63 ||
      !QUALIFIED_NAME.test(name) ||
      (prefix !== '' && dns1123Subdomain(prefix).length > 0)
    )
      out.push(
        fieldInvalid(
          field,
          k,
          "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        ),
      );
    if (typeof v !== 'string') continue;
    if (v.length > 63) out.push(fieldInvalid(field, v, 'must be no more than 63 characters'));
    else if (!LABEL_VALUE.test(v))
      out.push(
        fieldInvalid(
          field,
          v,
          "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
        ),
      );
  }
  return out;
}

/** Object metadata checks common to every resource, as `ValidateObjectMeta`. */
export function validateObjectMeta(
  obj: JsonObject,
  namespaced: boolean,
  nameRule: (name: string) => string[],
): FieldError[] {
  const m = isObject(obj.metadata) ? obj.metadata : {};
  const out: FieldError[] = [];
  const name = m.name;
  if (typeof name !== 'string' || name === '') {
    out.push(fieldRequired('metadata.name', 'name or generateName is required'));
  } else {
    for (const msg of nameRule(name)) out.push(fieldInvalid('metadata.name', name, msg));
  }
  if (namespaced && (typeof m.namespace !== 'string' || m.namespace === ''))
    out.push(fieldRequired('metadata.namespace'));
  out.push(...labelErrors('metadata.labels', m.labels));
  return out;
}
