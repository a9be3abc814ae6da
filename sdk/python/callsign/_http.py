"""The HTTP core: one request with authentication, idempotency keys and the
bounded retries of 429 and 503; an operation's answer made into models;
pages; and the event stream's parser. Standard library only."""

from __future__ import annotations

import email.utils
import http.client
import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from datetime import datetime, timezone
from typing import Any, Generic, Iterator, TypeVar

from . import errors
from .models import MODELS, OPERATIONS

T = TypeVar("T")

USER_AGENT = "callsign-python/0.1.0"


def now_rfc3339() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")


def query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def retry_after_seconds(value: str | None) -> float | None:
    """Retry-After as seconds: a number, or an HTTP date."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


class Transport:
    """Sends requests to one server with one key."""

    def __init__(self, base_url: str | None, api_key: str | None, timeout: float, max_retries: int,
                 max_retry_wait: float):
        base_url = base_url or os.environ.get("CALLSIGN_SERVER")
        if not base_url:
            raise errors.CallsignError("no server: pass base_url or set CALLSIGN_SERVER")
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key if api_key is not None else os.environ.get("CALLSIGN_API_KEY")
        self.timeout = timeout
        self.max_retries = max_retries
        self.max_retry_wait = max_retry_wait

    def url(self, path: str, query: dict[str, Any] | None) -> str:
        q = {k: query_value(v) for k, v in (query or {}).items() if v is not None}
        return self.base_url + path + ("?" + urllib.parse.urlencode(q) if q else "")

    def open(self, method: str, path: str, *, query: dict[str, Any] | None = None, body: Any = None,
             headers: dict[str, str] | None = None, idempotency_key: str | None = None,
             timeout: float | None = None) -> http.client.HTTPResponse:
        """The response to a request that succeeded (2xx), open for reading.
        A POST carries an Idempotency-Key (generated when none is given), so
        that retrying it cannot do it twice; 429 and 503 are retried after
        the server's Retry-After, at most max_retries times."""
        h = {"User-Agent": USER_AGENT, "Accept": "application/json"}
        if self.api_key:
            h["Authorization"] = "Bearer " + self.api_key
        data = None
        if isinstance(body, Multipart):
            data, h["Content-Type"] = body.encode()
        elif body is not None:
            data, h["Content-Type"] = json.dumps(body).encode(), "application/json"
        if method == "POST":
            h["Idempotency-Key"] = idempotency_key or str(uuid.uuid4())
        h.update(headers or {})
        url = self.url(path, query)
        for attempt in range(self.max_retries + 1):
            request = urllib.request.Request(url, data=data, headers=h, method=method)
            try:
                return urllib.request.urlopen(request, timeout=timeout or self.timeout)
            except urllib.error.HTTPError as e:
                with e:
                    raw = e.read()
                try:
                    parsed = json.loads(raw) if raw else None
                except ValueError:
                    parsed = raw.decode("utf-8", "replace")
                wait = retry_after_seconds(e.headers.get("Retry-After"))
                if e.code in (429, 503) and attempt < self.max_retries:
                    wait = min(2.0 ** attempt, self.max_retry_wait) if wait is None else wait
                    if wait <= self.max_retry_wait:
                        time.sleep(wait)
                        continue
                raise errors.error_for(e.code, parsed, e.headers, wait) from None
            except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
                raise errors.APIConnectionError(f"{method} {url}: {e}") from e
        raise AssertionError("unreachable")

    def request(self, method: str, path: str, **kw: Any) -> tuple[int, Any, bytes]:
        with self.open(method, path, **kw) as response:
            return response.status, response.headers, response.read()


class Multipart:
    """A multipart/form-data body of one file field."""

    def __init__(self, field: str, filename: str, content: bytes, content_type: str):
        self.field, self.filename, self.content, self.content_type = field, filename, content, content_type

    def encode(self) -> tuple[bytes, str]:
        boundary = uuid.uuid4().hex
        name = self.filename.replace('"', "%22").replace("\r", "").replace("\n", "")
        head = (f'--{boundary}\r\nContent-Disposition: form-data; name="{self.field}"; filename="{name}"\r\n'
                f"Content-Type: {self.content_type}\r\n\r\n").encode()
        return head + self.content + f"\r\n--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"


def substitute(template: str, params: dict[str, Any]) -> str:
    for name, value in params.items():
        template = template.replace("{" + name + "}", urllib.parse.quote(str(value), safe=""))
    return template


class Client:
    """Calls operations by their operationId (models.OPERATIONS)."""

    def __init__(self, transport: Transport):
        self.transport = transport

    def call(self, operation: str, params: dict[str, Any] | None = None, **kw: Any) -> Any:
        op = OPERATIONS[operation]
        _, _, raw = self.transport.request(op.method, substitute(op.path, params or {}), **kw)
        if op.answer == "none":
            return None
        if op.answer == "bytes":
            return raw
        if op.answer == "text":
            return raw.decode("utf-8")
        data = json.loads(raw)
        if op.answer == "page":
            return Page(self, operation, params or {}, kw.get("query") or {}, data)
        model = MODELS[op.model] if op.model else None
        if model is None:
            return data
        if op.answer == "list":
            return [model.from_dict(d) for d in data]
        return model.from_dict(data)

    def page(self, operation: str, params: dict[str, Any] | None = None, query: dict[str, Any] | None = None,
             default_limit: int = 100) -> Page:
        """The first page of a list. The API answers pages when `limit` is sent."""
        q = dict(query or {})
        if q.get("limit") is None and q.get("offset") is None:
            q["limit"] = default_limit
        return self.call(operation, params, query=q)


class Page(Generic[T]):
    """One page of a list (`results`, `count`, `next`); iterating it yields
    every item from this page on, fetching the next pages as it goes."""

    def __init__(self, client: Client, operation: str, params: dict[str, Any], query: dict[str, Any],
                 data: dict[str, Any]):
        op = OPERATIONS[operation]
        model = MODELS[op.model] if op.model else None
        self._client, self._operation, self._params, self._query = client, operation, params, query
        self.count: int = data.get("count", 0)
        self.next: str | None = data.get("next")
        self.previous: str | None = data.get("previous")
        self.results: list[T] = [model.from_dict(d) if model else d for d in data.get("results", [])]

    def has_next(self) -> bool:
        return bool(self.next)

    def next_page(self) -> Page[T] | None:
        """The page after this one (its query taken from `next`), or None."""
        if not self.next:
            return None
        query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(self.next).query))
        return self._client.call(self._operation, self._params, query=query)

    def __iter__(self) -> Iterator[T]:
        page: Page[T] | None = self
        while page is not None:
            yield from page.results
            page = page.next_page()

    def __repr__(self) -> str:
        return f"Page(count={self.count}, results={len(self.results)}, next={self.next!r})"


def server_sent_events(lines: Iterator[bytes]) -> Iterator[tuple[str | None, str | None, str]]:
    """(id, event type, data) for each event in a text/event-stream."""
    event_id, event_type, data = None, None, []
    for raw in lines:
        line = raw.decode("utf-8").rstrip("\r\n")
        if not line:
            if data:
                yield event_id, event_type, "\n".join(data)
            event_id, event_type, data = None, None, []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "id":
            event_id = value
        elif field == "event":
            event_type = value
        elif field == "data":
            data.append(value)
