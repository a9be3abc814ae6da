// The HTTP core: openapi-fetch over the generated paths, with the key, an
// idempotency key on every POST, bounded retries of 429 and 503, typed
// errors, and pages.
import createClient, { type Client } from "openapi-fetch";
import { ApiError, CallsignError, errorFor, retryAfterSeconds } from "./errors.js";
import type { operations, paths } from "./schema.js";

export interface CallsignOptions {
  /** The server's address; default: the CALLSIGN_SERVER environment variable. */
  baseUrl?: string;
  /** An API key; default: the CALLSIGN_API_KEY environment variable. */
  apiKey?: string;
  /** How many times 429 and 503 are retried (after the server's Retry-After); default 3. */
  maxRetries?: number;
  /** The longest Retry-After waited for, in seconds; a longer one is thrown at once. Default 60. */
  maxRetryWaitSeconds?: number;
  /** A fetch to use instead of the global one. */
  fetch?: typeof fetch;
}

/** The query parameters an operation takes. */
export type Query<Op extends keyof operations> = operations[Op]["parameters"] extends { query?: infer Q }
  ? NonNullable<Q>
  : never;

/** A list's query, where an identity may be given as itself or by its uuid. */
export type ListQuery<Op extends keyof operations> = Query<Op> extends { identity?: unknown }
  ? Omit<Query<Op>, "identity"> & { identity?: string | { uuid: string } }
  : Query<Op>;

/** The items of a list's answer, whether a plain array or a page. */
export type Item<D> = D extends (infer I)[] ? I : D extends { results: (infer I)[] } ? I : never;

interface FetchResult<D> {
  data?: D;
  error?: unknown;
  response: Response;
}

function env(name: string): string | undefined {
  const p = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process;
  return p?.env?.[name];
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class Core {
  readonly baseUrl: string;
  readonly api: Client<paths>;
  private readonly apiKey?: string;
  private readonly maxRetries: number;
  private readonly maxRetryWait: number;
  private readonly fetchImpl: typeof fetch;

  constructor(options: CallsignOptions = {}) {
    const baseUrl = options.baseUrl ?? env("CALLSIGN_SERVER");
    if (!baseUrl) throw new CallsignError("no server: pass baseUrl or set CALLSIGN_SERVER");
    this.baseUrl = baseUrl.replace(/\/+$/, "");
    this.apiKey = options.apiKey ?? env("CALLSIGN_API_KEY");
    this.maxRetries = options.maxRetries ?? 3;
    this.maxRetryWait = options.maxRetryWaitSeconds ?? 60;
    this.fetchImpl = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.api = createClient<paths>({ baseUrl: this.baseUrl, fetch: (request) => this.send(request) });
  }

  /** Sends a request with the key, and a POST with an Idempotency-Key
   * (generated when none is given, so that a retry cannot do it twice);
   * 429 and 503 are retried after the server's Retry-After, a bounded
   * number of times. */
  async send(request: Request): Promise<Response> {
    if (this.apiKey && !request.headers.has("Authorization")) request.headers.set("Authorization", `Bearer ${this.apiKey}`);
    if (request.method === "POST" && !request.headers.has("Idempotency-Key")) {
      request.headers.set("Idempotency-Key", crypto.randomUUID());
    }
    for (let attempt = 0; ; attempt++) {
      const response = await this.fetchImpl(attempt < this.maxRetries ? request.clone() : request);
      if ((response.status !== 429 && response.status !== 503) || attempt >= this.maxRetries) return response;
      const wait = retryAfterSeconds(response.headers.get("Retry-After")) ?? Math.min(2 ** attempt, this.maxRetryWait);
      if (wait > this.maxRetryWait) return response;
      await response.body?.cancel();
      await sleep(wait * 1000);
    }
  }

  /** The data of a successful answer; a typed error otherwise. */
  async unwrap<D>(result: Promise<FetchResult<D>>): Promise<D> {
    const { data, error, response } = await result;
    if (!response.ok) throw errorFor(response.status, error, response.headers);
    return data as D;
  }

  /** A list, by page or item by item: `get` fetches one page for a query. */
  list<Q extends object, D>(get: (query: Q) => Promise<FetchResult<D>>, query: object): PageRequest<Item<D>> {
    const fetchPage = async (q: Q): Promise<Page<Item<D>>> => {
      const data = await this.unwrap(get(q));
      const envelope = Array.isArray(data)
        ? { count: data.length, next: null, previous: null, results: data }
        : (data as { count: number; next: string | null; previous: string | null; results: Item<D>[] });
      return new Page(envelope, (next) => fetchPage(next as Q));
    };
    const q = { ...query } as Record<string, unknown>;
    if (typeof q.identity === "object" && q.identity) q.identity = (q.identity as { uuid: string }).uuid;
    return new PageRequest(() => fetchPage((q.limit == null && q.offset == null ? { ...q, limit: 100 } : q) as Q));
  }
}

/** One page of a list. */
export class Page<T> {
  readonly count: number;
  readonly next: string | null;
  readonly previous: string | null;
  readonly results: T[];

  constructor(
    data: { count: number; next: string | null; previous: string | null; results: T[] },
    private readonly fetchQuery: (query: Record<string, string>) => Promise<Page<T>>,
  ) {
    this.count = data.count;
    this.next = data.next;
    this.previous = data.previous;
    this.results = data.results;
  }

  hasNext(): boolean {
    return !!this.next;
  }

  /** The page after this one (its query taken from `next`), or null. */
  nextPage(): Promise<Page<T> | null> {
    if (!this.next) return Promise.resolve(null);
    return this.fetchQuery(Object.fromEntries(new URL(this.next, "http://x").searchParams));
  }

  /** Every item from this page on, fetching the next pages as it goes. */
  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    for (let page: Page<T> | null = this; page; page = await page.nextPage()) yield* page.results;
  }
}

/** A list request: `await` it for the first page, or `for await` over it
 * for every item, page after page. */
export class PageRequest<T> implements PromiseLike<Page<T>>, AsyncIterable<T> {
  private first?: Promise<Page<T>>;

  constructor(private readonly fetchFirst: () => Promise<Page<T>>) {}

  private page(): Promise<Page<T>> {
    return (this.first ??= this.fetchFirst());
  }

  then<A = Page<T>, B = never>(
    onfulfilled?: ((page: Page<T>) => A | PromiseLike<A>) | null,
    onrejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
  ): Promise<A | B> {
    return this.page().then(onfulfilled, onrejected);
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    yield* await this.page();
  }
}
