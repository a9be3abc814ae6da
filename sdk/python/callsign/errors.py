"""The errors the SDK raises: one class per kind of answer the API gives."""

from __future__ import annotations

from typing import Any


class CallsignError(Exception):
    """Anything the SDK raises."""


class APIConnectionError(CallsignError):
    """The server could not be reached, or the connection broke."""


class WaitTimeoutError(CallsignError, TimeoutError):
    """A wait (verifications.wait_for_code) ended with nothing found."""


class APIError(CallsignError):
    """An error answer: `status`, the API's `detail` and its whole `body`."""

    def __init__(self, status: int, body: Any, headers: Any = None):
        self.status = status
        self.body = body
        self.headers = headers or {}
        detail = body.get("detail") if isinstance(body, dict) else None
        self.detail: str = detail if isinstance(detail, str) else str(body)
        super().__init__(f"{status}: {self.detail}")


class ValidationError(APIError):
    """400: `fields` maps each field (and `non_field_errors`) to its messages."""

    def __init__(self, status: int, body: Any, headers: Any = None):
        super().__init__(status, body, headers)
        self.fields: dict[str, list[str]] = body if isinstance(body, dict) and "detail" not in body else {}
        if self.fields:
            self.args = (f"{status}: " + "; ".join(f"{k}: {' '.join(v)}" for k, v in self.fields.items()),)


class AuthenticationError(APIError):
    """401: no key, or one the server does not know."""


class ForbiddenError(APIError):
    """403: the key may not do this (an identity key, a quota)."""


class NotFoundError(APIError):
    """404: no such object in the key's reach."""


class ConflictError(APIError):
    """409: taken (a name, an address), or the same idempotency key still running."""


class GoneError(APIError):
    """410: an event cursor older than the server keeps."""


class RateLimitedError(APIError):
    """429 after the retries: `retry_after` is the server's Retry-After in seconds."""

    def __init__(self, status: int, body: Any, headers: Any = None, retry_after: float | None = None):
        super().__init__(status, body, headers)
        self.retry_after = retry_after


_BY_STATUS = {400: ValidationError, 401: AuthenticationError, 403: ForbiddenError, 404: NotFoundError,
              409: ConflictError, 410: GoneError}


def error_for(status: int, body: Any, headers: Any, retry_after: float | None) -> APIError:
    if status == 429:
        return RateLimitedError(status, body, headers, retry_after)
    return _BY_STATUS.get(status, APIError)(status, body, headers)
