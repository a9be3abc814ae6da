// Callsign's API for agents: identities with inboxes and phone numbers,
// mail, texts, calls, contacts, a vault, verification codes and events.
import { Core, type CallsignOptions } from "./core.js";
import { Events } from "./events.js";
import {
  Calls, Contacts, Domains, Identities, Keys, Mail, Passwords, Secrets, Texts, Verifications, Webhooks,
} from "./resources.js";
import type { Whoami } from "./schema.js";

export class Callsign {
  /** The typed openapi-fetch client, for a route the resources do not wrap yet. */
  readonly api: Core["api"];
  readonly identities: Identities;
  readonly mail: Mail;
  readonly texts: Texts;
  readonly calls: Calls;
  readonly contacts: Contacts;
  readonly passwords: Passwords;
  readonly secrets: Secrets;
  readonly verifications: Verifications;
  readonly events: Events;
  readonly webhooks: Webhooks;
  readonly domains: Domains;
  readonly keys: Keys;
  private readonly core: Core;

  /** `baseUrl` and `apiKey` default to CALLSIGN_SERVER and CALLSIGN_API_KEY. */
  constructor(options: CallsignOptions = {}) {
    const core = (this.core = new Core(options));
    this.api = core.api;
    this.identities = new Identities(core);
    this.mail = new Mail(core);
    this.texts = new Texts(core);
    this.calls = new Calls(core);
    this.contacts = new Contacts(core);
    this.passwords = new Passwords(core);
    this.secrets = new Secrets(core);
    this.verifications = new Verifications(core);
    this.events = new Events(core);
    this.webhooks = new Webhooks(core);
    this.domains = new Domains(core);
    this.keys = new Keys(core);
  }

  /** Who the key is: its account, type, identity, usage and quotas. */
  whoami(): Promise<Whoami> {
    return this.core.unwrap(this.core.api.GET("/api/health/whoami/"));
  }
}

export { Page, PageRequest, type CallsignOptions } from "./core.js";
export type { StreamOptions } from "./events.js";
export type { Idempotent, MailDraft, Ref, VerificationFilter } from "./resources.js";
export {
  ApiError, AuthenticationError, CallsignError, ConflictError, ForbiddenError, GoneError, NotFoundError,
  RateLimitedError, ValidationError, WaitTimeoutError,
} from "./errors.js";
export type * from "./schema.js";
