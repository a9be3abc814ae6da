"""Callsign's API for agents: identities with inboxes and phone numbers,
mail, texts, calls, contacts, a vault, verification codes and events.

    from callsign import Callsign
    cs = Callsign()  # CALLSIGN_SERVER and CALLSIGN_API_KEY
    me = cs.identities.create(name="Ada")
    code = cs.verifications.wait_for_code(identity=me, timeout=60)
"""

from __future__ import annotations

from typing import Any

from . import models
from ._http import Client, Page, Transport
from .errors import (APIConnectionError, APIError, AuthenticationError, CallsignError, ConflictError, ForbiddenError,
                     GoneError, NotFoundError, RateLimitedError, ValidationError, WaitTimeoutError)
from .models import Whoami
from .resources import (Calls, Contacts, Domains, Events, Identities, Keys, Mail, Passwords, Secrets, Texts,
                        Verifications, Webhooks)

__all__ = ["Callsign", "Page", "models", "CallsignError", "APIError", "APIConnectionError", "ValidationError",
           "AuthenticationError", "ForbiddenError", "NotFoundError", "ConflictError", "GoneError",
           "RateLimitedError", "WaitTimeoutError"]


class Callsign:
    """A client of one Callsign server. `base_url` and `api_key` default to
    CALLSIGN_SERVER and CALLSIGN_API_KEY. Requests time out after `timeout`
    seconds; 429 and 503 are retried after the server's Retry-After, at
    most `max_retries` times and never waiting longer than `max_retry_wait`."""

    def __init__(self, base_url: str | None = None, api_key: str | None = None, *, timeout: float = 30,
                 max_retries: int = 3, max_retry_wait: float = 60):
        self._client = Client(Transport(base_url, api_key, timeout, max_retries, max_retry_wait))
        self.identities = Identities(self._client)
        self.mail = Mail(self._client)
        self.texts = Texts(self._client)
        self.calls = Calls(self._client)
        self.contacts = Contacts(self._client)
        self.passwords = Passwords(self._client)
        self.secrets = Secrets(self._client)
        self.verifications = Verifications(self._client)
        self.events = Events(self._client)
        self.webhooks = Webhooks(self._client)
        self.domains = Domains(self._client)
        self.keys = Keys(self._client)

    def whoami(self) -> Whoami:
        """Who the key is: its account, type, identity, usage and quotas."""
        return self._client.call("health_whoami")

    def call(self, operation: str, params: dict[str, Any] | None = None, **kw: Any) -> Any:
        """Calls any operation by its operationId (for a route the resources
        do not wrap yet): path `params`, and `query`, `body`, `idempotency_key`."""
        return self._client.call(operation, params, **kw)
