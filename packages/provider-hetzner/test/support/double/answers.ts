// Test support (not a test file): the error answers of the Hetzner Cloud API double. Status codes
// and error codes are the API's documented table ("Errors"); the body is the documented
// `{"error": {"code", "message", "details"}}` with `details.fields[]` for `invalid_input` and
// `uniqueness_error` and `details.limits[]` for `resource_limit_exceeded`. Messages that were
// captured from the real API (test/fixtures/api/README.md says which) are used word for word;
// the others are the double's own, in the API's style.

/** The documented status of each error code. */
export const STATUS: Readonly<Record<string, number>> = Object.freeze({
  json_error: 400,
  unauthorized: 401,
  token_readonly: 401,
  forbidden: 403,
  maintenance: 403,
  resource_limit_exceeded: 403,
  not_found: 404,
  method_not_allowed: 405,
  uniqueness_error: 409,
  conflict: 409,
  deprecated_api_endpoint: 410,
  resource_unavailable: 412,
  invalid_input: 422,
  service_error: 422,
  unsupported_error: 422,
  locked: 423,
  protected: 423,
  rate_limit_exceeded: 429,
  server_error: 500,
  unavailable: 503,
  timeout: 504,
  // Codes hcloud-go knows that the documented table leaves out: 422 is the double's choice.
  resource_in_use: 422,
  firewall_resource_not_found: 422,
});

/** An error answer: thrown by a route, written by the double. */
export class Refusal extends Error {
  readonly code: string;
  readonly status: number;
  readonly details: Record<string, unknown>;
  constructor(code: string, message: string, details: Record<string, unknown> = {}) {
    super(message);
    this.code = code;
    this.status = STATUS[code] ?? 500;
    this.details = details;
  }

  body(): { error: { code: string; message: string; details: Record<string, unknown> } } {
    return { error: { code: this.code, message: this.message, details: this.details } };
  }
}

/**
 * `invalid_input` naming one field, in the documented message form; `short` leaves the field's
 * messages out of the message (as the API answers a bad label), keeping them in the details.
 */
export function invalidField(field: string, messages: readonly string[], short = false): Refusal {
  const message =
    messages.length === 0 || short
      ? `invalid input in field '${field}'`
      : `invalid input in field '${field}': ${messages.join(', ')}`;
  return new Refusal('invalid_input', message, { fields: [{ name: field, messages }] });
}

/** The 401 of a token the double does not know (captured wording), echoing it when asked to. */
export function unauthorized(echo: string | undefined): Refusal {
  return new Refusal(
    'unauthorized',
    echo === undefined ? 'unable to authenticate' : `unable to authenticate with token ${echo}`,
  );
}

/** `not_found` of one resource by ID. */
export function notFound(kind: string, id: string): Refusal {
  return new Refusal('not_found', `${kind} with ID '${id}' not found`);
}

/** `uniqueness_error` of a name. */
export function nameTaken(kind: string): Refusal {
  return new Refusal('uniqueness_error', `${kind} name is already used`, {
    fields: [{ name: 'name' }],
  });
}

/** `resource_limit_exceeded` of the project's servers. */
export function serverLimit(limit: number): Refusal {
  return new Refusal('resource_limit_exceeded', `server limit of ${limit} exceeded`, {
    limits: [{ name: 'server_limit' }],
  });
}

/** `rate_limit_exceeded`. */
export function rateLimited(limit: number): Refusal {
  return new Refusal('rate_limit_exceeded', `limit of ${limit} requests per hour reached`);
}
