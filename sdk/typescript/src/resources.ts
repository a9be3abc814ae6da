// The resource groups, mirroring the REST API's. Types come from the
// generated schema.ts, so each method is one typed openapi-fetch call and a
// new route is a few lines here.
import type { Core, ListQuery, Query } from "./core.js";
import { WaitTimeoutError } from "./errors.js";
import type * as T from "./schema.js";

/** An object given as itself or by its uuid (an identity, a contact...). */
export type Ref = string | { uuid: string };

/** A webhook given as itself or by its id. */
export type WebhookRef = string | { id: string };

const uuidOf = (ref: Ref): string => (typeof ref === "string" ? ref : ref.uuid);
const webhookId = (ref: WebhookRef): string => (typeof ref === "string" ? ref : ref.id);
const idem = (key?: string) => (key ? { "Idempotency-Key": key } : {});

/** Options every create or send takes. */
export interface Idempotent {
  /** Sent as Idempotency-Key; one is generated when none is given. */
  idempotencyKey?: string;
}

/** A message to send, in the SDK's words: `to`, `text`, `attachments`. */
export interface MailDraft {
  to?: string | string[];
  cc?: string | string[];
  bcc?: string | string[];
  subject?: string;
  /** The text body. */
  text?: string;
  html?: string;
  /** Attachments uploaded with mail.attachments.upload, or their uuids. */
  attachments?: Ref[];
}

const draftBody = (d: MailDraft): T.ComposeRequest => ({
  to_email: d.to, cc: d.cc, bcc: d.bcc, subject: d.subject, content: d.text, html: d.html,
  attachment_uuids: d.attachments?.map(uuidOf),
});

abstract class Resource {
  constructor(protected readonly core: Core) {}
}

export class Identities extends Resource {
  list(query: ListQuery<"identities_list"> = {}) {
    return this.core.list((q) => this.core.api.GET("/api/identities/", { params: { query: q } }), query);
  }
  create(body: T.IdentityRequest & Idempotent = {}): Promise<T.Identity> {
    const { idempotencyKey, ...rest } = body;
    return this.core.unwrap(this.core.api.POST("/api/identities/", { body: rest, params: { header: idem(idempotencyKey) } }));
  }
  get(identity: Ref): Promise<T.Identity> {
    return this.core.unwrap(this.core.api.GET("/api/identities/{uuid}/", { params: { path: { uuid: uuidOf(identity) } } }));
  }
  update(identity: Ref, changes: T.IdentityRequest): Promise<T.Identity> {
    return this.core.unwrap(this.core.api.PATCH("/api/identities/{uuid}/", { params: { path: { uuid: uuidOf(identity) } }, body: changes }));
  }
  /** Deletes the identity and everything it owns. */
  async delete(identity: Ref): Promise<void> {
    await this.core.unwrap(this.core.api.DELETE("/api/identities/{uuid}/", { params: { path: { uuid: uuidOf(identity) }, query: { confirm: true } } }));
  }
  provisionPhone(identity: Ref, body: T.ProvisionPhoneRequest & Idempotent = {}): Promise<T.Identity> {
    const { idempotencyKey, ...rest } = body;
    return this.core.unwrap(this.core.api.POST("/api/identities/{uuid}/provision-phone/", {
      params: { path: { uuid: uuidOf(identity) }, header: idem(idempotencyKey) }, body: rest,
    }));
  }
  voiceAgent(identity: Ref): Promise<T.VoiceAgent> {
    return this.core.unwrap(this.core.api.GET("/api/identities/{uuid}/voice-agent/", { params: { path: { uuid: uuidOf(identity) } } }));
  }
  setVoiceAgent(identity: Ref, body: T.VoiceAgentRequest): Promise<T.VoiceAgent> {
    return this.core.unwrap(this.core.api.PUT("/api/identities/{uuid}/voice-agent/", { params: { path: { uuid: uuidOf(identity) } }, body }));
  }
}

export class Inboxes extends Resource {
  list(query: ListQuery<"email_list"> = {}) {
    return this.core.list((q) => this.core.api.GET("/api/email/", { params: { query: q } }), query);
  }
  create(opts: { identity?: Ref; email?: string } & Idempotent = {}): Promise<T.Inbox> {
    return this.core.unwrap(this.core.api.POST("/api/email/", {
      params: { query: { identity: opts.identity && uuidOf(opts.identity) }, header: idem(opts.idempotencyKey) },
      body: { email: opts.email },
    }));
  }
  get(id: number): Promise<T.Inbox> {
    return this.core.unwrap(this.core.api.GET("/api/email/{id}/", { params: { path: { id } } }));
  }
  async delete(id: number): Promise<void> {
    await this.core.unwrap(this.core.api.DELETE("/api/email/{id}/", { params: { path: { id } } }));
  }
  checkAvailability(email: string) {
    return this.core.unwrap(this.core.api.GET("/api/email/check-availability/", { params: { query: { email } } }));
  }
}

export class Threads extends Resource {
  list(query: ListQuery<"email_inbox_list"> = {}) {
    return this.core.list((q) => this.core.api.GET("/api/email-inbox/", { params: { query: q } }), query);
  }
  get(threadId: string): Promise<T.ThreadDetail> {
    return this.core.unwrap(this.core.api.GET("/api/email-inbox/{id}/", { params: { path: { id: threadId } } }));
  }
}

export class Drafts extends Resource {
  list(query: ListQuery<"email_drafts_list"> = {}) {
    return this.core.list((q) => this.core.api.GET("/api/email-drafts/", { params: { query: q } }), query);
  }
  create(draft: MailDraft & Idempotent & { identity?: Ref; sendAt?: string; replyTo?: number; replyAll?: boolean; forwardOf?: number }): Promise<T.Draft> {
    return this.core.unwrap(this.core.api.POST("/api/email-drafts/", {
      params: { query: { identity: draft.identity && uuidOf(draft.identity) }, header: idem(draft.idempotencyKey) },
      body: { ...draftBody(draft), send_at: draft.sendAt, reply_to: draft.replyTo, reply_all: draft.replyAll ?? false, forward_of: draft.forwardOf },
    }));
  }
  get(id: string): Promise<T.Draft> {
    return this.core.unwrap(this.core.api.GET("/api/email-drafts/{id}/", { params: { path: { id } } }));
  }
  update(id: string, draft: MailDraft & { sendAt?: string | null }): Promise<T.Draft> {
    return this.core.unwrap(this.core.api.PATCH("/api/email-drafts/{id}/", {
      params: { path: { id } }, body: { ...draftBody(draft), send_at: draft.sendAt },
    }));
  }
  async delete(id: string): Promise<void> {
    await this.core.unwrap(this.core.api.DELETE("/api/email-drafts/{id}/", { params: { path: { id } } }));
  }
  send(id: string, opts: Idempotent = {}): Promise<T.EmailMessage> {
    return this.core.unwrap(this.core.api.POST("/api/email-drafts/{id}/send/", { params: { path: { id }, header: idem(opts.idempotencyKey) }, body: {} }));
  }
}

export class Attachments extends Resource {
  upload(file: { filename: string; content: Blob | Uint8Array | string; contentType?: string; identity?: Ref } & Idempotent): Promise<T.Attachment> {
    const form = new FormData();
    const content = file.content instanceof Blob ? file.content : new Blob([file.content as BlobPart], { type: file.contentType ?? "application/octet-stream" });
    form.append("file", content, file.filename);
    return this.core.unwrap(this.core.api.POST("/api/attachments/", {
      params: { query: { identity: file.identity && uuidOf(file.identity) }, header: idem(file.idempotencyKey) },
      body: form as unknown as { file: string },
      bodySerializer: (body) => body as unknown as FormData,
    }));
  }
  async download(attachment: Ref): Promise<Uint8Array> {
    const buf = await this.core.unwrap(this.core.api.GET("/api/attachments/{uuid}/", {
      params: { path: { uuid: uuidOf(attachment) } }, parseAs: "arrayBuffer",
    }));
    return new Uint8Array(buf);
  }
}

export class Mail extends Resource {
  readonly inboxes = new Inboxes(this.core);
  readonly threads = new Threads(this.core);
  readonly drafts = new Drafts(this.core);
  readonly attachments = new Attachments(this.core);

  /** Sends a new message from the identity's inbox (the first, or `inbox`). */
  send(msg: MailDraft & Idempotent & { identity?: Ref; inbox?: number }): Promise<T.EmailMessage> {
    return this.core.unwrap(this.core.api.POST("/api/email-messages/compose/", {
      params: { query: { identity: msg.identity && uuidOf(msg.identity), inbox: msg.inbox }, header: idem(msg.idempotencyKey) },
      body: draftBody(msg),
    }));
  }
  /** Messages, oldest first (most relevant first with `q`). */
  list(query: ListQuery<"email_messages_list"> = {}) {
    return this.core.list((q) => this.core.api.GET("/api/email-messages/", { params: { query: q } }), query);
  }
  get(id: number): Promise<T.EmailMessage> {
    return this.core.unwrap(this.core.api.GET("/api/email-messages/{id}/", { params: { path: { id } } }));
  }
  update(id: number, changes: T.MessageUpdate): Promise<T.EmailMessage> {
    return this.core.unwrap(this.core.api.PATCH("/api/email-messages/{id}/", { params: { path: { id } }, body: changes }));
  }
  async delete(id: number): Promise<void> {
    await this.core.unwrap(this.core.api.DELETE("/api/email-messages/{id}/", { params: { path: { id } } }));
  }
  /** The message as received or sent (RFC 5322). */
  raw(id: number): Promise<string> {
    return this.core.unwrap(this.core.api.GET("/api/email-messages/{id}/raw/", { params: { path: { id } }, parseAs: "text" }));
  }
  reply(id: number, msg: Omit<MailDraft, "to" | "subject"> & Idempotent): Promise<T.EmailMessage> {
    return this.core.unwrap(this.core.api.POST("/api/email-messages/{id}/reply/", { params: { path: { id }, header: idem(msg.idempotencyKey) }, body: draftBody(msg) }));
  }
  replyAll(id: number, msg: Omit<MailDraft, "to" | "subject"> & Idempotent): Promise<T.EmailMessage> {
    return this.core.unwrap(this.core.api.POST("/api/email-messages/{id}/reply-all/", { params: { path: { id }, header: idem(msg.idempotencyKey) }, body: draftBody(msg) }));
  }
  forward(id: number, msg: MailDraft & Idempotent): Promise<T.EmailMessage> {
    return this.core.unwrap(this.core.api.POST("/api/email-messages/{id}/forward/", { params: { path: { id }, header: idem(msg.idempotencyKey) }, body: draftBody(msg) }));
  }
}

export class Conversations extends Resource {
  list(query: ListQuery<"sms_inbox_list"> = {}) {
    return this.core.list((q) => this.core.api.GET("/api/sms-inbox/", { params: { query: q } }), query);
  }
  get(conversationId: string): Promise<T.ConversationDetail> {
    return this.core.unwrap(this.core.api.GET("/api/sms-inbox/{id}/", { params: { path: { id: conversationId } } }));
  }
}

export class Texts extends Resource {
  readonly conversations = new Conversations(this.core);

  send(msg: T.SendSmsRequest & Idempotent & { identity?: Ref }): Promise<T.SmsMessage> {
    return this.core.unwrap(this.core.api.POST("/api/messages/send/", {
      params: { query: { identity: msg.identity && uuidOf(msg.identity) }, header: idem(msg.idempotencyKey) },
      body: { to: msg.to, body: msg.body },
    }));
  }
  list(query: ListQuery<"messages_list"> = {}) {
    return this.core.list((q) => this.core.api.GET("/api/messages/", { params: { query: q } }), query);
  }
  get(id: number): Promise<T.SmsMessage> {
    return this.core.unwrap(this.core.api.GET("/api/messages/{id}/", { params: { path: { id } } }));
  }
  update(id: number, changes: T.MessageUpdate): Promise<T.SmsMessage> {
    return this.core.unwrap(this.core.api.PATCH("/api/messages/{id}/", { params: { path: { id } }, body: changes }));
  }
  async delete(id: number): Promise<void> {
    await this.core.unwrap(this.core.api.DELETE("/api/messages/{id}/", { params: { path: { id } } }));
  }
}

export class Calls extends Resource {
  list(query: ListQuery<"calls_list"> = {}) {
    return this.core.list((q) => this.core.api.GET("/api/calls/", { params: { query: q } }), query);
  }
  get(id: number): Promise<T.Call> {
    return this.core.unwrap(this.core.api.GET("/api/calls/{id}/", { params: { path: { id } } }));
  }
}

export class Contacts extends Resource {
  list(query: ListQuery<"contacts_list"> = {}) {
    return this.core.list((q) => this.core.api.GET("/api/contacts/", { params: { query: q } }), query);
  }
  search(query: ListQuery<"contacts_search">) {
    return this.core.list((q: Query<"contacts_search">) => this.core.api.GET("/api/contacts/search/", { params: { query: q } }), query);
  }
  find(query: Query<"contacts_find">): Promise<T.Contact> {
    return this.core.unwrap(this.core.api.GET("/api/contacts/find/", { params: { query } }));
  }
  create(contact: T.ContactRequest & Idempotent & { identity?: Ref }): Promise<T.Contact> {
    const { identity, idempotencyKey, ...body } = contact;
    return this.core.unwrap(this.core.api.POST("/api/contacts/", {
      params: { query: { identity: identity && uuidOf(identity) }, header: idem(idempotencyKey) }, body,
    }));
  }
  get(contact: Ref): Promise<T.Contact> {
    return this.core.unwrap(this.core.api.GET("/api/contacts/{uuid}/", { params: { path: { uuid: uuidOf(contact) } } }));
  }
  update(contact: Ref, changes: T.ContactRequest): Promise<T.Contact> {
    return this.core.unwrap(this.core.api.PATCH("/api/contacts/{uuid}/", { params: { path: { uuid: uuidOf(contact) } }, body: changes }));
  }
  async delete(contact: Ref): Promise<void> {
    await this.core.unwrap(this.core.api.DELETE("/api/contacts/{uuid}/", { params: { path: { uuid: uuidOf(contact) } } }));
  }
}

export class Totp extends Resource {
  /** The current one-time code of a password stored with a TOTP secret. */
  code(password: Ref): Promise<T.TotpCode> {
    return this.core.unwrap(this.core.api.GET("/api/passwords/{uuid}/totp/", { params: { path: { uuid: uuidOf(password) } } }));
  }
}

export class Passwords extends Resource {
  readonly totp = new Totp(this.core);

  list(query: ListQuery<"passwords_list"> = {}) {
    return this.core.list((q) => this.core.api.GET("/api/passwords/", { params: { query: q } }), query);
  }
  create(password: T.PasswordRequest & Idempotent & { identity?: Ref }): Promise<T.Password> {
    const { identity, idempotencyKey, ...body } = password;
    return this.core.unwrap(this.core.api.POST("/api/passwords/", {
      params: { query: { identity: identity && uuidOf(identity) }, header: idem(idempotencyKey) }, body,
    }));
  }
  async generate(options: Query<"passwords_generate"> = {}): Promise<string> {
    return (await this.core.unwrap(this.core.api.GET("/api/passwords/generate-password/", { params: { query: options } }))).password;
  }
  get(password: Ref): Promise<T.Password> {
    return this.core.unwrap(this.core.api.GET("/api/passwords/{uuid}/", { params: { path: { uuid: uuidOf(password) } } }));
  }
  update(password: Ref, changes: Partial<T.PasswordRequest>): Promise<T.Password> {
    return this.core.unwrap(this.core.api.PATCH("/api/passwords/{uuid}/", { params: { path: { uuid: uuidOf(password) } }, body: changes as T.PasswordRequest }));
  }
  async delete(password: Ref): Promise<void> {
    await this.core.unwrap(this.core.api.DELETE("/api/passwords/{uuid}/", { params: { path: { uuid: uuidOf(password) } } }));
  }
}

export class Secrets extends Resource {
  list(query: ListQuery<"secrets_list"> = {}) {
    return this.core.list((q) => this.core.api.GET("/api/secrets/", { params: { query: q } }), query);
  }
  create(secret: T.SecretRequest & Idempotent & { identity?: Ref }): Promise<T.Secret> {
    const { identity, idempotencyKey, ...body } = secret;
    return this.core.unwrap(this.core.api.POST("/api/secrets/", {
      params: { query: { identity: identity && uuidOf(identity) }, header: idem(idempotencyKey) }, body,
    }));
  }
  get(secret: Ref): Promise<T.Secret> {
    return this.core.unwrap(this.core.api.GET("/api/secrets/{uuid}/", { params: { path: { uuid: uuidOf(secret) } } }));
  }
  update(secret: Ref, changes: Partial<T.SecretRequest>): Promise<T.Secret> {
    return this.core.unwrap(this.core.api.PATCH("/api/secrets/{uuid}/", { params: { path: { uuid: uuidOf(secret) } }, body: changes as T.SecretRequest }));
  }
  async delete(secret: Ref): Promise<void> {
    await this.core.unwrap(this.core.api.DELETE("/api/secrets/{uuid}/", { params: { path: { uuid: uuidOf(secret) } } }));
  }
}

export interface VerificationFilter {
  identity: Ref;
  /** Only senders (address or number) containing this, ignoring case. */
  from?: string;
  /** Only those received after this time (RFC 3339). */
  after?: string;
  source?: "email" | "sms";
}

export class Verifications extends Resource {
  private readonly since = new Date().toISOString();
  private readonly seen = new Map<string, string>(); // identity -> created_dt of the last code returned

  /** Codes and links found in the identity's received mail and texts, newest first. */
  list(filter: VerificationFilter & { limit?: number; wait?: number }): Promise<T.ReceivedVerification[]> {
    const { identity, ...query } = filter;
    return this.core.unwrap(this.core.api.GET("/api/identities/{uuid}/verifications/", {
      params: { path: { uuid: uuidOf(identity) }, query },
    }));
  }

  /** The first code or link received after `after` (by default: since this
   * client was made, or after the last one it returned for the identity):
   * `{ code, link, kind, message }` (message: the message's id) and more.
   * Throws WaitTimeoutError when none arrives within `timeoutSeconds` (120). */
  async waitForCode(filter: VerificationFilter & { timeoutSeconds?: number }): Promise<T.ReceivedVerification> {
    const { timeoutSeconds = 120, ...rest } = filter;
    const identity = uuidOf(filter.identity);
    const after = filter.after ?? this.seen.get(identity) ?? this.since;
    const deadline = Date.now() + timeoutSeconds * 1000;
    for (let remaining = timeoutSeconds; remaining > 0; remaining = (deadline - Date.now()) / 1000) {
      const found = await this.list({ ...rest, identity, after, wait: Math.max(1, Math.min(60, Math.floor(remaining))) });
      if (found.length > 0) {
        this.seen.set(identity, found[0].created_dt);
        return found[0];
      }
    }
    throw new WaitTimeoutError(`no verification code for ${identity} within ${timeoutSeconds} s`);
  }
}

export class Webhooks extends Resource {
  list(): Promise<T.OutboundWebhook[]> {
    return this.core.unwrap(this.core.api.GET("/api/webhooks/"));
  }
  create(webhook: T.OutboundWebhookRequest & Idempotent): Promise<T.OutboundWebhook> {
    const { idempotencyKey, ...body } = webhook;
    return this.core.unwrap(this.core.api.POST("/api/webhooks/", { params: { header: idem(idempotencyKey) }, body }));
  }
  get(webhook: WebhookRef): Promise<T.OutboundWebhook> {
    return this.core.unwrap(this.core.api.GET("/api/webhooks/{uuid}/", { params: { path: { uuid: webhookId(webhook) } } }));
  }
  update(webhook: WebhookRef, changes: Partial<T.OutboundWebhookRequest>): Promise<T.OutboundWebhook> {
    return this.core.unwrap(this.core.api.PATCH("/api/webhooks/{uuid}/", { params: { path: { uuid: webhookId(webhook) } }, body: changes as T.OutboundWebhookRequest }));
  }
  async delete(webhook: WebhookRef): Promise<void> {
    await this.core.unwrap(this.core.api.DELETE("/api/webhooks/{uuid}/", { params: { path: { uuid: webhookId(webhook) } } }));
  }
  async secret(webhook: WebhookRef): Promise<string> {
    return (await this.core.unwrap(this.core.api.GET("/api/webhooks/{uuid}/secret/", { params: { path: { uuid: webhookId(webhook) } } }))).secret;
  }
  rotateSecret(webhook: WebhookRef): Promise<T.OutboundWebhook> {
    return this.core.unwrap(this.core.api.POST("/api/webhooks/{uuid}/rotate-secret/", { params: { path: { uuid: webhookId(webhook) } } }));
  }
  test(webhook: WebhookRef) {
    return this.core.unwrap(this.core.api.POST("/api/webhooks/{uuid}/test/", { params: { path: { uuid: webhookId(webhook) } } }));
  }
  deliveries(webhook: WebhookRef, query: Query<"webhooks_deliveries"> = {}) {
    const uuid = webhookId(webhook);
    return this.core.list((q) => this.core.api.GET("/api/webhooks/{uuid}/deliveries/", { params: { path: { uuid }, query: q } }), query);
  }
  retryDelivery(webhook: WebhookRef, delivery: number): Promise<T.WebhookDelivery> {
    return this.core.unwrap(this.core.api.POST("/api/webhooks/{uuid}/deliveries/{delivery}/retry/", {
      params: { path: { uuid: webhookId(webhook), delivery } },
    }));
  }
}

export class Domains extends Resource {
  list(): Promise<T.Domain[]> {
    return this.core.unwrap(this.core.api.GET("/api/domains/"));
  }
  create(name: string): Promise<T.Domain> {
    return this.core.unwrap(this.core.api.POST("/api/domains/", { body: { name } }));
  }
  get(name: string): Promise<T.Domain> {
    return this.core.unwrap(this.core.api.GET("/api/domains/{name}/", { params: { path: { name } } }));
  }
  async delete(name: string): Promise<void> {
    await this.core.unwrap(this.core.api.DELETE("/api/domains/{name}/", { params: { path: { name } } }));
  }
  verify(name: string): Promise<T.Domain> {
    return this.core.unwrap(this.core.api.POST("/api/domains/{name}/verify/", { params: { path: { name } } }));
  }
  rotateDkim(name: string): Promise<T.Domain> {
    return this.core.unwrap(this.core.api.POST("/api/domains/{name}/rotate-dkim/", { params: { path: { name } } }));
  }
}

export class ManagementKeys extends Resource {
  list(query: ListQuery<"keys_management_list"> = {}) {
    return this.core.list((q) => this.core.api.GET("/api/auth/keys/management/", { params: { query: q } }), query);
  }
  create(body: T.KeyRequest = {}): Promise<T.ManagementKeyCreated> {
    return this.core.unwrap(this.core.api.POST("/api/auth/keys/management/", { body }));
  }
  get(id: number): Promise<T.ManagementKey> {
    return this.core.unwrap(this.core.api.GET("/api/auth/keys/management/{id}/", { params: { path: { id } } }));
  }
  async delete(id: number): Promise<void> {
    await this.core.unwrap(this.core.api.DELETE("/api/auth/keys/management/{id}/", { params: { path: { id } } }));
  }
}

export class IdentityKeys extends Resource {
  list(query: ListQuery<"keys_identity_list"> = {}) {
    return this.core.list((q) => this.core.api.GET("/api/auth/keys/identity/", { params: { query: q } }), query);
  }
  create(body: Omit<T.IdentityKeyRequest, "identity"> & { identity: Ref }): Promise<T.IdentityKeyCreated> {
    return this.core.unwrap(this.core.api.POST("/api/auth/keys/identity/", { body: { ...body, identity: uuidOf(body.identity) } }));
  }
  get(id: number): Promise<T.IdentityKey> {
    return this.core.unwrap(this.core.api.GET("/api/auth/keys/identity/{id}/", { params: { path: { id } } }));
  }
  update(id: number, changes: T.IdentityKeyUpdate): Promise<T.IdentityKey> {
    return this.core.unwrap(this.core.api.PATCH("/api/auth/keys/identity/{id}/", { params: { path: { id } }, body: changes }));
  }
  async delete(id: number): Promise<void> {
    await this.core.unwrap(this.core.api.DELETE("/api/auth/keys/identity/{id}/", { params: { path: { id } } }));
  }
}

/** API keys: the account's management keys and identity keys. */
export class Keys {
  readonly management: ManagementKeys;
  readonly identity: IdentityKeys;
  constructor(core: Core) {
    this.management = new ManagementKeys(core);
    this.identity = new IdentityKeys(core);
  }
}
