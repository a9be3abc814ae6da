"""The resource groups, mirroring the REST API's: each method is one
operation (by its operationId in models.OPERATIONS) with its arguments
named as the API names them, so a new route is a line here."""

from __future__ import annotations

import http.client
import json
import time
from typing import Any, Iterator

from . import errors
from ._http import Client, Multipart, Page, now_rfc3339, server_sent_events
from .models import (Attachment, Call, Contact, Conversation, ConversationDetail, Domain, Draft, DraftSummary,
                     EmailMessage, EmailMessageSummary, Event, Identity, IdentityKey, IdentityKeyCreated, Inbox,
                     ManagementKey, ManagementKeyCreated, OutboundWebhook, Password, ReceivedVerification, Secret,
                     SMSMessage, ThreadDetail, ThreadSummary, TOTPCode, VoiceAgent, WebhookDelivery)


def uuid_of(obj: Any) -> Any:
    """An identity (or other object) given as itself or by its uuid."""
    return getattr(obj, "uuid", obj)


def fields(**values: Any) -> dict[str, Any]:
    """A body or query of the values given (None means not sent)."""
    return {k: uuid_of(v) if k == "identity" else v for k, v in values.items() if v is not None}


class Resource:
    def __init__(self, client: Client):
        self._c = client


class Identities(Resource):
    def list(self, **query: Any) -> Page[Identity]:
        return self._c.page("identities_list", query=query)

    def create(self, name: str | None = None, *, email_identifier: str | None = None, domain: str | None = None,
               provision_phone: bool | None = None, country_code: str | None = None,
               idempotency_key: str | None = None) -> Identity:
        body = fields(name=name, email_identifier=email_identifier, domain=domain, provision_phone=provision_phone,
                      country_code=country_code)
        return self._c.call("identities_create", body=body, idempotency_key=idempotency_key)

    def get(self, identity: Any) -> Identity:
        return self._c.call("identities_retrieve", {"uuid": uuid_of(identity)})

    def update(self, identity: Any, **changes: Any) -> Identity:
        return self._c.call("identities_partial_update", {"uuid": uuid_of(identity)}, body=changes)

    def delete(self, identity: Any) -> None:
        """Deletes the identity and everything it owns."""
        self._c.call("identities_destroy", {"uuid": uuid_of(identity)}, query={"confirm": True})

    def provision_phone(self, identity: Any, *, country_code: str | None = None,
                        idempotency_key: str | None = None) -> Identity:
        return self._c.call("identities_provision_phone", {"uuid": uuid_of(identity)},
                            body=fields(country_code=country_code), idempotency_key=idempotency_key)

    def voice_agent(self, identity: Any) -> VoiceAgent:
        return self._c.call("identities_voice_agent_retrieve", {"uuid": uuid_of(identity)})

    def set_voice_agent(self, identity: Any, *, response_url: str, method: str | None = None,
                        enabled: bool | None = None) -> VoiceAgent:
        return self._c.call("identities_voice_agent_update", {"uuid": uuid_of(identity)},
                            body=fields(response_url=response_url, method=method, enabled=enabled))


def draft_body(to: Any = None, subject: str | None = None, text: str | None = None, html: str | None = None,
               cc: Any = None, bcc: Any = None, attachments: list[Any] | None = None) -> dict[str, Any]:
    return fields(to_email=to, subject=subject, content=text, html=html, cc=cc, bcc=bcc,
                  attachment_uuids=[uuid_of(a) for a in attachments] if attachments else None)


class Inboxes(Resource):
    def list(self, **query: Any) -> Page[Inbox]:
        return self._c.page("email_list", query=fields(**query))

    def create(self, *, identity: Any = None, email: str | None = None, idempotency_key: str | None = None) -> Inbox:
        return self._c.call("email_create", query=fields(identity=identity), body=fields(email=email),
                            idempotency_key=idempotency_key)

    def get(self, inbox_id: int) -> Inbox:
        return self._c.call("email_retrieve", {"id": inbox_id})

    def delete(self, inbox_id: int) -> None:
        self._c.call("email_destroy", {"id": inbox_id})

    def check_availability(self, email: str) -> dict[str, Any]:
        return self._c.call("email_check_availability", query={"email": email})


class Threads(Resource):
    def list(self, **query: Any) -> Page[ThreadSummary]:
        return self._c.page("email_inbox_list", query=fields(**query))

    def get(self, thread_id: str) -> ThreadDetail:
        return self._c.call("email_inbox_retrieve", {"id": thread_id})


class Drafts(Resource):
    def list(self, **query: Any) -> Page[DraftSummary]:
        return self._c.page("email_drafts_list", query=fields(**query))

    def create(self, *, identity: Any = None, send_at: str | None = None, reply_to: int | None = None,
               reply_all: bool | None = None, forward_of: int | None = None, idempotency_key: str | None = None,
               **draft: Any) -> Draft:
        body = draft_body(**draft) | fields(send_at=send_at, reply_to=reply_to, reply_all=reply_all,
                                            forward_of=forward_of)
        return self._c.call("email_drafts_create", query=fields(identity=identity), body=body,
                            idempotency_key=idempotency_key)

    def get(self, draft_id: str) -> Draft:
        return self._c.call("email_drafts_retrieve", {"id": draft_id})

    def update(self, draft_id: str, *, send_at: str | None = None, **draft: Any) -> Draft:
        return self._c.call("email_drafts_partial_update", {"id": draft_id},
                            body=draft_body(**draft) | fields(send_at=send_at))

    def delete(self, draft_id: str) -> None:
        self._c.call("email_drafts_destroy", {"id": draft_id})

    def send(self, draft_id: str, *, idempotency_key: str | None = None) -> EmailMessage:
        return self._c.call("email_drafts_send", {"id": draft_id}, body={}, idempotency_key=idempotency_key)


class Attachments(Resource):
    def upload(self, filename: str, content: bytes, *, content_type: str = "application/octet-stream",
               identity: Any = None, idempotency_key: str | None = None) -> Attachment:
        return self._c.call("attachments_create", query=fields(identity=identity),
                            body=Multipart("file", filename, content, content_type), idempotency_key=idempotency_key)

    def download(self, attachment: Any) -> bytes:
        return self._c.call("attachments_retrieve", {"uuid": uuid_of(attachment)})


class Mail(Resource):
    """Messages, and inboxes, threads, drafts and attachments beneath."""

    def __init__(self, client: Client):
        super().__init__(client)
        self.inboxes = Inboxes(client)
        self.threads = Threads(client)
        self.drafts = Drafts(client)
        self.attachments = Attachments(client)

    def send(self, *, to: Any, subject: str | None = None, text: str | None = None, html: str | None = None,
             cc: Any = None, bcc: Any = None, attachments: list[Any] | None = None, identity: Any = None,
             inbox: int | None = None, idempotency_key: str | None = None) -> EmailMessage:
        """Sends a new message from the identity's inbox (the first, or `inbox`)."""
        return self._c.call("email_messages_compose", query=fields(identity=identity, inbox=inbox),
                            body=draft_body(to, subject, text, html, cc, bcc, attachments),
                            idempotency_key=idempotency_key)

    def list(self, *, identity: Any = None, q: str | None = None, limit: int | None = None,
             **filters: Any) -> Page[EmailMessageSummary]:
        """Messages, oldest first (or most relevant first with `q`)."""
        return self._c.page("email_messages_list", query=fields(identity=identity, q=q, limit=limit, **filters))

    def get(self, message_id: int) -> EmailMessage:
        return self._c.call("email_messages_retrieve", {"id": message_id})

    def update(self, message_id: int, *, is_read: bool) -> EmailMessage:
        return self._c.call("email_messages_partial_update", {"id": message_id}, body={"is_read": is_read})

    def delete(self, message_id: int) -> None:
        self._c.call("email_messages_destroy", {"id": message_id})

    def raw(self, message_id: int) -> bytes:
        """The message as received or sent (RFC 5322)."""
        return self._c.call("email_messages_raw", {"id": message_id})

    def _respond(self, operation: str, message_id: int, idempotency_key: str | None, **draft: Any) -> EmailMessage:
        return self._c.call(operation, {"id": message_id}, body=draft_body(**draft), idempotency_key=idempotency_key)

    def reply(self, message_id: int, *, text: str, idempotency_key: str | None = None, **draft: Any) -> EmailMessage:
        return self._respond("email_messages_reply", message_id, idempotency_key, text=text, **draft)

    def reply_all(self, message_id: int, *, text: str, idempotency_key: str | None = None,
                  **draft: Any) -> EmailMessage:
        return self._respond("email_messages_reply_all", message_id, idempotency_key, text=text, **draft)

    def forward(self, message_id: int, *, to: Any, text: str | None = None, idempotency_key: str | None = None,
                **draft: Any) -> EmailMessage:
        return self._respond("email_messages_forward", message_id, idempotency_key, to=to, text=text, **draft)


class Conversations(Resource):
    def list(self, **query: Any) -> Page[Conversation]:
        return self._c.page("sms_inbox_list", query=fields(**query))

    def get(self, conversation_id: str) -> ConversationDetail:
        return self._c.call("sms_inbox_retrieve", {"id": conversation_id})


class Texts(Resource):
    """Text messages (SMS), and conversations beneath."""

    def __init__(self, client: Client):
        super().__init__(client)
        self.conversations = Conversations(client)

    def send(self, *, to: str, body: str, identity: Any = None, idempotency_key: str | None = None) -> SMSMessage:
        return self._c.call("messages_send", query=fields(identity=identity), body={"to": to, "body": body},
                            idempotency_key=idempotency_key)

    def list(self, **query: Any) -> Page[SMSMessage]:
        return self._c.page("messages_list", query=fields(**query))

    def get(self, message_id: int) -> SMSMessage:
        return self._c.call("messages_retrieve", {"id": message_id})

    def update(self, message_id: int, *, is_read: bool) -> SMSMessage:
        return self._c.call("messages_partial_update", {"id": message_id}, body={"is_read": is_read})

    def delete(self, message_id: int) -> None:
        self._c.call("messages_destroy", {"id": message_id})


class Calls(Resource):
    def list(self, **query: Any) -> Page[Call]:
        return self._c.page("calls_list", query=fields(**query))

    def get(self, call_id: int) -> Call:
        return self._c.call("calls_retrieve", {"id": call_id})


class Contacts(Resource):
    def list(self, **query: Any) -> Page[Contact]:
        return self._c.page("contacts_list", query=fields(**query))

    def search(self, q: str, **query: Any) -> Page[Contact]:
        return self._c.page("contacts_search", query=fields(q=q, **query))

    def find(self, *, email: str | None = None, phone_number: str | None = None, identity: Any = None) -> Contact:
        return self._c.call("contacts_find", query=fields(email=email, phone_number=phone_number, identity=identity))

    def create(self, *, identity: Any = None, idempotency_key: str | None = None, **contact: Any) -> Contact:
        return self._c.call("contacts_create", query=fields(identity=identity), body=fields(**contact),
                            idempotency_key=idempotency_key)

    def get(self, contact: Any) -> Contact:
        return self._c.call("contacts_retrieve", {"uuid": uuid_of(contact)})

    def update(self, contact: Any, **changes: Any) -> Contact:
        return self._c.call("contacts_partial_update", {"uuid": uuid_of(contact)}, body=changes)

    def delete(self, contact: Any) -> None:
        self._c.call("contacts_destroy", {"uuid": uuid_of(contact)})


class Totp(Resource):
    def code(self, password: Any) -> TOTPCode:
        """The current one-time code of a password stored with a TOTP secret."""
        return self._c.call("passwords_totp_retrieve", {"uuid": uuid_of(password)})


class Passwords(Resource):
    def __init__(self, client: Client):
        super().__init__(client)
        self.totp = Totp(client)

    def list(self, **query: Any) -> Page[Password]:
        return self._c.page("passwords_list", query=fields(**query))

    def create(self, *, domain: str, password: str, username: str | None = None, notes: str | None = None,
               totp: str | None = None, identity: Any = None, idempotency_key: str | None = None) -> Password:
        body = fields(domain=domain, password=password, username=username, notes=notes, totp=totp)
        return self._c.call("passwords_create", query=fields(identity=identity), body=body,
                            idempotency_key=idempotency_key)

    def generate(self, **options: Any) -> str:
        return self._c.call("passwords_generate", query=fields(**options))["password"]

    def get(self, password: Any) -> Password:
        return self._c.call("passwords_retrieve", {"uuid": uuid_of(password)})

    def update(self, password: Any, **changes: Any) -> Password:
        return self._c.call("passwords_partial_update", {"uuid": uuid_of(password)}, body=changes)

    def delete(self, password: Any) -> None:
        self._c.call("passwords_destroy", {"uuid": uuid_of(password)})


class Secrets(Resource):
    def list(self, **query: Any) -> Page[Secret]:
        return self._c.page("secrets_list", query=fields(**query))

    def create(self, *, key: str, value: str, identity: Any = None, idempotency_key: str | None = None) -> Secret:
        return self._c.call("secrets_create", query=fields(identity=identity), body={"key": key, "value": value},
                            idempotency_key=idempotency_key)

    def get(self, secret: Any) -> Secret:
        return self._c.call("secrets_retrieve", {"uuid": uuid_of(secret)})

    def update(self, secret: Any, **changes: Any) -> Secret:
        return self._c.call("secrets_partial_update", {"uuid": uuid_of(secret)}, body=changes)

    def delete(self, secret: Any) -> None:
        self._c.call("secrets_destroy", {"uuid": uuid_of(secret)})


class Verifications(Resource):
    """Codes and sign-in links found in an identity's received mail and texts."""

    def __init__(self, client: Client):
        super().__init__(client)
        self._since = now_rfc3339()
        self._seen: dict[str, str] = {}  # identity -> created_dt of the last code returned

    def list(self, identity: Any, *, sender: str | None = None, after: str | None = None,
             source: str | None = None, limit: int | None = None, wait: int | None = None) -> list[ReceivedVerification]:
        """Newest first."""
        query = fields(**{"from": sender}, after=after, source=source, limit=limit, wait=wait)
        return self._c.call("identities_verifications_list", {"uuid": uuid_of(identity)}, query=query,
                            timeout=(wait or 0) + self._c.transport.timeout)

    def wait_for_code(self, identity: Any, *, sender: str | None = None, timeout: float = 120,
                      after: str | None = None, source: str | None = None) -> ReceivedVerification:
        """The first code or link received after `after` (by default: since
        this client was made, or after the last one it returned for the
        identity), with `code`, `link`, `kind` and `message` (the message's
        id); raises WaitTimeoutError when none arrives within `timeout` seconds."""
        ident = uuid_of(identity)
        after = after or self._seen.get(ident, self._since)
        deadline = time.monotonic() + timeout
        while (remaining := deadline - time.monotonic()) > 0:
            found = self.list(ident, sender=sender, after=after, source=source, wait=max(1, min(60, int(remaining))))
            if found:
                self._seen[ident] = found[0].created_dt
                return found[0]
        raise errors.WaitTimeoutError(f"no verification code for {ident} within {timeout:g} s")


class Events(Resource):
    def list(self, *, after: str | None = None, types: Any = None, identity: Any = None, limit: int | None = None,
             wait: int | None = None) -> Page[Event]:
        query = fields(after=after, types=types, identity=identity, limit=limit, wait=wait)
        return self._c.call("events_list", query=query, timeout=(wait or 0) + self._c.transport.timeout)

    def stream(self, *, types: Any = None, after: str | None = None, identity: Any = None,
               read_timeout: float = 60, max_backoff: float = 30) -> Iterator[Event]:
        """Every event after `after` (an event id; none: from the oldest kept),
        then each as it happens, forever. A broken connection is reopened
        from the last event received (Last-Event-ID), so nothing is missed or
        repeated; errors the API answers (401, 410...) are raised. The server
        sends a comment every 15 s, so `read_timeout` finds a dead connection."""
        last = after
        backoff = 0.5
        query = fields(types=types, identity=identity)
        while True:
            headers = {"Accept": "text/event-stream"}
            if last:
                headers["Last-Event-ID"] = last
            try:
                with self._c.transport.open("GET", "/api/events/stream/", query=query, headers=headers,
                                            timeout=read_timeout) as response:
                    for event_id, _, data in server_sent_events(response):
                        event = Event.from_dict(json.loads(data))
                        last = event_id or event.id
                        backoff = 0.5
                        yield event
            except errors.APIError as e:
                if e.status < 500:
                    raise
            except (errors.APIConnectionError, OSError, http.client.HTTPException):
                pass  # reconnect
            time.sleep(backoff)
            backoff = min(backoff * 2, max_backoff)


class Webhooks(Resource):
    def list(self) -> list[OutboundWebhook]:
        return self._c.call("webhooks_list")

    def create(self, *, url: str, event_types: list[str] | None = None, identities: list[Any] | None = None,
               description: str | None = None, enabled: bool | None = None,
               idempotency_key: str | None = None) -> OutboundWebhook:
        body = fields(url=url, event_types=event_types, identities=[uuid_of(i) for i in identities or []] or None,
                      description=description, enabled=enabled)
        return self._c.call("webhooks_create", body=body, idempotency_key=idempotency_key)

    def get(self, webhook: Any) -> OutboundWebhook:
        return self._c.call("webhooks_retrieve", {"uuid": uuid_of(webhook)})

    def update(self, webhook: Any, **changes: Any) -> OutboundWebhook:
        return self._c.call("webhooks_partial_update", {"uuid": uuid_of(webhook)}, body=changes)

    def delete(self, webhook: Any) -> None:
        self._c.call("webhooks_destroy", {"uuid": uuid_of(webhook)})

    def secret(self, webhook: Any) -> str:
        return self._c.call("webhooks_secret", {"uuid": uuid_of(webhook)})["secret"]

    def rotate_secret(self, webhook: Any) -> OutboundWebhook:
        return self._c.call("webhooks_rotate_secret", {"uuid": uuid_of(webhook)})

    def test(self, webhook: Any) -> dict[str, Any]:
        return self._c.call("webhooks_test", {"uuid": uuid_of(webhook)})

    def deliveries(self, webhook: Any, **query: Any) -> Page[WebhookDelivery]:
        return self._c.page("webhooks_deliveries", {"uuid": uuid_of(webhook)}, query=query)

    def retry_delivery(self, webhook: Any, delivery: int) -> WebhookDelivery:
        return self._c.call("webhooks_delivery_retry", {"uuid": uuid_of(webhook), "delivery": delivery})


class Domains(Resource):
    def list(self) -> list[Domain]:
        return self._c.call("domains_list")

    def create(self, name: str) -> Domain:
        return self._c.call("domains_create", body={"name": name})

    def get(self, name: str) -> Domain:
        return self._c.call("domains_retrieve", {"name": name})

    def delete(self, name: str) -> None:
        self._c.call("domains_destroy", {"name": name})

    def verify(self, name: str) -> Domain:
        return self._c.call("domains_verify", {"name": name})

    def rotate_dkim(self, name: str) -> Domain:
        return self._c.call("domains_rotate_dkim", {"name": name})


class ManagementKeys(Resource):
    def list(self, **query: Any) -> Page[ManagementKey]:
        return self._c.page("keys_management_list", query=query)

    def create(self, name: str | None = None) -> ManagementKeyCreated:
        return self._c.call("keys_management_create", body=fields(name=name))

    def get(self, key_id: int) -> ManagementKey:
        return self._c.call("keys_management_retrieve", {"id": key_id})

    def delete(self, key_id: int) -> None:
        self._c.call("keys_management_destroy", {"id": key_id})


class IdentityKeys(Resource):
    def list(self, **query: Any) -> Page[IdentityKey]:
        return self._c.page("keys_identity_list", query=fields(**query))

    def create(self, identity: Any, *, name: str | None = None, can_provision: bool | None = None,
               can_send: bool | None = None) -> IdentityKeyCreated:
        body = fields(identity=identity, name=name, can_provision=can_provision, can_send=can_send)
        return self._c.call("keys_identity_create", body=body)

    def get(self, key_id: int) -> IdentityKey:
        return self._c.call("keys_identity_retrieve", {"id": key_id})

    def update(self, key_id: int, *, can_send: bool) -> IdentityKey:
        return self._c.call("keys_identity_partial_update", {"id": key_id}, body={"can_send": can_send})

    def delete(self, key_id: int) -> None:
        self._c.call("keys_identity_destroy", {"id": key_id})


class Keys:
    """API keys: the account's management keys and identity keys."""

    def __init__(self, client: Client):
        self.management = ManagementKeys(client)
        self.identity = IdentityKeys(client)
