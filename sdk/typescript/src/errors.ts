// The errors the SDK throws: one class per kind of answer the API gives.

/** Anything the SDK throws. */
export class CallsignError extends Error {
  override name = "CallsignError";
}

/** A wait (verifications.waitForCode) ended with nothing found. */
export class WaitTimeoutError extends CallsignError {
  override name = "WaitTimeoutError";
}

/** An error answer: `status`, the API's `detail` and its whole `body`. */
export class ApiError extends CallsignError {
  override name = "ApiError";
  readonly detail: string;
  constructor(
    readonly status: number,
    readonly body: unknown,
    readonly headers: Headers,
    message?: string,
  ) {
    const detail = typeof body === "object" && body !== null && typeof (body as { detail?: unknown }).detail === "string"
      ? (body as { detail: string }).detail
      : typeof body === "string" ? body : JSON.stringify(body);
    super(message ?? `${status}: ${detail}`);
    this.detail = detail;
  }
}

/** 400: `fields` maps each field (and `non_field_errors`) to its messages. */
export class ValidationError extends ApiError {
  override name = "ValidationError";
  readonly fields: Record<string, string[]>;
  constructor(status: number, body: unknown, headers: Headers) {
    const fields = typeof body === "object" && body !== null && !("detail" in body) ? (body as Record<string, string[]>) : {};
    const summary = Object.entries(fields).map(([k, v]) => `${k}: ${[v].flat().join(" ")}`).join("; ");
    super(status, body, headers, summary ? `${status}: ${summary}` : undefined);
    this.fields = fields;
  }
}

/** 401: no key, or one the server does not know. */
export class AuthenticationError extends ApiError {
  override name = "AuthenticationError";
}

/** 403: the key may not do this (an identity key, a quota). */
export class ForbiddenError extends ApiError {
  override name = "ForbiddenError";
}

/** 404: no such object in the key's reach. */
export class NotFoundError extends ApiError {
  override name = "NotFoundError";
}

/** 409: taken (a name, an address), or the same idempotency key still running. */
export class ConflictError extends ApiError {
  override name = "ConflictError";
}

/** 410: an event cursor older than the server keeps. */
export class GoneError extends ApiError {
  override name = "GoneError";
}

/** 429 after the retries: `retryAfter` is the server's Retry-After in seconds. */
export class RateLimitedError extends ApiError {
  override name = "RateLimitedError";
  readonly retryAfter: number | null;
  constructor(status: number, body: unknown, headers: Headers) {
    super(status, body, headers);
    this.retryAfter = retryAfterSeconds(headers.get("Retry-After"));
  }
}

const byStatus: Record<number, typeof ApiError> = {
  401: AuthenticationError, 403: ForbiddenError, 404: NotFoundError, 409: ConflictError, 410: GoneError,
};

export function errorFor(status: number, body: unknown, headers: Headers): ApiError {
  if (status === 400) return new ValidationError(status, body, headers);
  if (status === 429) return new RateLimitedError(status, body, headers);
  return new (byStatus[status] ?? ApiError)(status, body, headers);
}

/** Retry-After as seconds: a number, or an HTTP date; null when absent or unreadable. */
export function retryAfterSeconds(value: string | null): number | null {
  if (!value) return null;
  const seconds = Number(value);
  if (!Number.isNaN(seconds)) return Math.max(0, seconds);
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, (date - Date.now()) / 1000);
}
