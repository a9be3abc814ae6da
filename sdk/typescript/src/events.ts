// The event log: by page (long poll with `wait`), or followed as
// Server-Sent Events that resume from the last event across reconnects.
import type { Core, Query } from "./core.js";
import { ApiError, errorFor } from "./errors.js";
import type { Event } from "./schema.js";

export interface StreamOptions {
  /** Event types, or prefixes like "email.*". */
  types?: string | string[];
  /** An event id: only later events (none: from the oldest kept). */
  after?: string;
  /** One identity's events (a management key sees the account's). */
  identity?: string;
  /** Ends the stream. */
  signal?: AbortSignal;
  /** A connection silent this long is dropped and reopened (the server sends a comment every 15 s); default 60 s. */
  readTimeoutSeconds?: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class Events {
  constructor(private readonly core: Core) {}

  /** A page of events after a cursor, oldest first; `wait` holds an empty answer. */
  list(query: Query<"events_list"> = {}) {
    return this.core.list((q) => this.core.api.GET("/api/events/", { params: { query: q } }), query);
  }

  /** Every event after `after`, then each as it happens, until `signal`
   * aborts or the loop breaks. A broken connection is reopened from the
   * last event received (Last-Event-ID), so nothing is missed or repeated;
   * errors the API answers (401, 410...) are thrown. */
  async *stream(options: StreamOptions = {}): AsyncGenerator<Event> {
    const url = new URL(this.core.baseUrl + "/api/events/stream/");
    if (options.types) url.searchParams.set("types", [options.types].flat().join(","));
    if (options.identity) url.searchParams.set("identity", options.identity);
    let last = options.after;
    let backoff = 500;
    const readTimeout = (options.readTimeoutSeconds ?? 60) * 1000;
    while (!options.signal?.aborted) {
      const connection = new AbortController();
      const abort = () => connection.abort();
      options.signal?.addEventListener("abort", abort);
      let timer: ReturnType<typeof setTimeout> | undefined;
      const watch = () => {
        clearTimeout(timer);
        timer = setTimeout(abort, readTimeout);
      };
      try {
        const headers: Record<string, string> = { Accept: "text/event-stream" };
        if (last) headers["Last-Event-ID"] = last;
        watch();
        const response = await this.core.send(new Request(url, { headers, signal: connection.signal }));
        if (!response.ok) {
          const text = await response.text();
          let body: unknown = text;
          try { body = JSON.parse(text); } catch { /* not JSON */ }
          throw errorFor(response.status, body, response.headers);
        }
        for await (const { id, data } of serverSentEvents(response.body!, watch)) {
          const event = JSON.parse(data) as Event;
          last = id ?? event.id;
          backoff = 500;
          yield event;
        }
      } catch (err) {
        if (err instanceof ApiError && err.status < 500) throw err;
        if (options.signal?.aborted) return;
        // A network error or a dropped connection: reconnect below.
      } finally {
        clearTimeout(timer);
        options.signal?.removeEventListener("abort", abort);
        connection.abort();
      }
      await sleep(backoff);
      backoff = Math.min(backoff * 2, 30_000);
    }
  }
}

/** Each event in a text/event-stream body; `onData` is called for every chunk. */
async function* serverSentEvents(body: ReadableStream<Uint8Array>, onData: () => void) {
  const decoder = new TextDecoder();
  let buffer = "";
  let id: string | undefined;
  let data: string[] = [];
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    onData();
    buffer += decoder.decode(chunk, { stream: true });
    let nl: number;
    while ((nl = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, nl).replace(/\r$/, "");
      buffer = buffer.slice(nl + 1);
      if (line === "") {
        if (data.length) yield { id, data: data.join("\n") };
        id = undefined;
        data = [];
        continue;
      }
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
      if (field === "id") id = value;
      else if (field === "data") data.push(value);
    }
  }
}
