// The SDK (as built in dist/) against a real `callsign serve`, through every resource.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { after, before, test } from "node:test";
import {
  Callsign, ConflictError, ForbiddenError, NotFoundError, RateLimitedError, ValidationError, WaitTimeoutError,
} from "../dist/index.js";
import { sendMail, startServer } from "./server.mjs";

let server, cs;
before(async () => {
  server = await startServer();
  cs = new Callsign({ baseUrl: server.baseUrl, apiKey: server.key });
});
after(() => server?.stop());

test("defaults to CALLSIGN_SERVER and CALLSIGN_API_KEY", async () => {
  process.env.CALLSIGN_SERVER = server.baseUrl;
  process.env.CALLSIGN_API_KEY = server.key;
  try {
    assert.equal((await new Callsign().whoami()).key_type, "management");
  } finally {
    delete process.env.CALLSIGN_SERVER;
    delete process.env.CALLSIGN_API_KEY;
  }
});

test("identities, and the errors the API answers", async () => {
  const ada = await cs.identities.create({ name: "Ada" });
  assert.match(ada.inbox, /@agents\.test$/);
  assert.equal((await cs.identities.get(ada)).uuid, ada.uuid);
  assert.equal((await cs.identities.update(ada.uuid, { name: "Ada L" })).name, "Ada L");
  await assert.rejects(cs.identities.create({ name: "Ada L" }), ConflictError);
  await assert.rejects(cs.identities.create({ domain: "nowhere.example" }), (e) =>
    e instanceof ValidationError && e.status === 400 && e.fields.domain.length > 0);
  await assert.rejects(cs.identities.get("00000000-0000-4000-8000-000000000000"), NotFoundError);
  const withPhone = await cs.identities.provisionPhone(ada);
  assert.match(withPhone.phone, /^\+/);
  const agent = await cs.identities.setVoiceAgent(ada, { response_url: "https://agent.example/voice" });
  assert.equal((await cs.identities.voiceAgent(ada)).response_url, agent.response_url);
  const names = [];
  for await (const i of cs.identities.list()) names.push(i.name);
  assert.ok(names.includes("Ada L"));
  const gone = await cs.identities.create();
  await cs.identities.delete(gone);
  await assert.rejects(cs.identities.get(gone), NotFoundError);
});

test("an idempotency key makes a repeated create one identity", async () => {
  const first = await cs.identities.create({ name: "Once", idempotencyKey: "once-1" });
  const again = await cs.identities.create({ name: "Once", idempotencyKey: "once-1" });
  assert.equal(again.uuid, first.uuid);
});

test("mail: send, list by page and item, read, reply, forward, drafts, raw, attachments", async () => {
  const [a, b] = [await cs.identities.create(), await cs.identities.create()];
  const file = await cs.mail.attachments.upload({ identity: a, filename: "notes.txt", content: "revenue: 42", contentType: "text/plain" });
  const sent = await cs.mail.send({ identity: a, to: b.inbox, subject: "Numbers", text: "See attached.", attachments: [file] });
  assert.equal(sent.subject, "Numbers");
  assert.equal(new TextDecoder().decode(await cs.mail.attachments.download(file)), "revenue: 42");
  for (let i = 0; i < 2; i++) await cs.mail.send({ identity: a, to: b.inbox, subject: `More ${i}`, text: "x" });
  const page = await cs.mail.list({ identity: a, limit: 2 });
  assert.equal(page.results.length, 2);
  assert.ok(page.hasNext());
  assert.equal((await page.nextPage()).results.length, 1);
  const all = [];
  for await (const m of cs.mail.list({ identity: a, limit: 2 })) all.push(m.subject);
  assert.deepEqual(all.sort(), ["More 0", "More 1", "Numbers"]);
  assert.equal((await cs.mail.list({ identity: a, q: "numbers" })).results[0].id, sent.id);
  assert.match(await cs.mail.raw(sent.id), /Subject: Numbers/);
  assert.equal((await cs.mail.update(sent.id, { is_read: true })).is_read, true);
  assert.equal((await cs.mail.get(sent.id)).content.trim(), "See attached.");
  const reply = await cs.mail.reply(sent.id, { text: "Thanks" });
  assert.match(reply.subject, /^Re: /);
  await cs.mail.replyAll(sent.id, { text: "Thanks all" });
  const fwd = await cs.mail.forward(sent.id, { to: "someone@example.com", text: "FYI" });
  assert.match(fwd.subject, /^Fwd: /);
  const threads = await cs.mail.threads.list({ identity: a });
  assert.ok(threads.results.length >= 1);
  assert.ok((await cs.mail.threads.get(threads.results[0].thread_id)).messages.length >= 1);
  const inboxes = await cs.mail.inboxes.list({ identity: a });
  assert.equal((await cs.mail.inboxes.get(inboxes.results[0].id)).email, a.inbox);
  const extra = await cs.mail.inboxes.create({ identity: a });
  assert.equal((await cs.mail.inboxes.checkAvailability(extra.email)).available, false);
  await cs.mail.inboxes.delete(extra.id);
  const draft = await cs.mail.drafts.create({ identity: a, to: b.inbox, subject: "Draft", text: "later" });
  assert.equal((await cs.mail.drafts.update(draft.id, { text: "now" })).content, "now");
  assert.equal((await cs.mail.drafts.get(draft.id)).subject, "Draft");
  assert.equal((await cs.mail.drafts.list({ identity: a })).results.length, 1);
  assert.equal((await cs.mail.drafts.send(draft.id)).subject, "Draft");
  const doomed = await cs.mail.drafts.create({ identity: a, to: b.inbox, text: "never" });
  await cs.mail.drafts.delete(doomed.id);
  await cs.mail.delete(reply.id);
  await assert.rejects(cs.mail.get(reply.id), NotFoundError);
});

test("texts, conversations and calls", async () => {
  const t = await cs.identities.provisionPhone(await cs.identities.create());
  const sms = await cs.texts.send({ identity: t, to: "+14155550100", body: "hello" });
  assert.equal((await cs.texts.get(sms.id)).body, "hello");
  assert.equal((await cs.texts.list({ identity: t.uuid })).results[0].id, sms.id);
  assert.equal((await cs.texts.update(sms.id, { is_read: true })).is_read, true);
  const convs = await cs.texts.conversations.list({ identity: t.uuid });
  assert.equal((await cs.texts.conversations.get(convs.results[0].conversation_id)).messages[0].body, "hello");
  await cs.texts.delete(sms.id);
  assert.equal((await cs.calls.list({ identity: t.uuid })).count, 0);
  await assert.rejects(cs.calls.get(999999), NotFoundError);
});

test("contacts, page by page", async () => {
  const id = await cs.identities.create();
  for (const name of ["Ann", "Bea", "Cy"]) {
    await cs.contacts.create({ identity: id, email: `${name.toLowerCase()}@example.com`, display_name: name });
  }
  const first = await cs.contacts.list({ identity: id.uuid, limit: 2 });
  assert.equal(first.count, 3);
  const names = [];
  for await (const c of cs.contacts.list({ identity: id.uuid, limit: 2 })) names.push(c.display_name);
  assert.deepEqual(names.sort(), ["Ann", "Bea", "Cy"]);
  const ann = await cs.contacts.find({ identity: id.uuid, email: "ann@example.com" });
  assert.equal((await cs.contacts.get(ann)).display_name, "Ann");
  assert.equal((await cs.contacts.update(ann, { nickname: "A" })).nickname, "A");
  assert.equal((await cs.contacts.search({ identity: id.uuid, q: "Bea" })).results[0].display_name, "Bea");
  await cs.contacts.delete(ann);
});

test("passwords with totp, and secrets", async () => {
  const id = await cs.identities.create();
  const pw = await cs.passwords.create({ identity: id, domain: "bank.example", username: "ada", password: "s3cret", totp: "JBSWY3DPEHPK3PXP" });
  assert.equal((await cs.passwords.get(pw)).password, "s3cret");
  assert.equal((await cs.passwords.update(pw, { notes: "main" })).notes, "main");
  assert.match((await cs.passwords.totp.code(pw)).code, /^\d{6}$/);
  assert.equal((await cs.passwords.list({ identity: id.uuid })).results.length, 1);
  assert.equal((await cs.passwords.generate({ length: 24 })).length, 24);
  await cs.passwords.delete(pw);
  const s = await cs.secrets.create({ identity: id, key: "token", value: "v1" });
  assert.equal((await cs.secrets.update(s, { value: "v2" })).value, "v2");
  assert.equal((await cs.secrets.get(s)).value, "v2");
  assert.equal((await cs.secrets.list({ identity: id.uuid, key: "token" })).results[0].uuid, s.uuid);
  await cs.secrets.delete(s);
});

test("verifications: waitForCode finds the code a site mails, and times out without one", async () => {
  const id = await cs.identities.create();
  await assert.rejects(cs.verifications.waitForCode({ identity: id, timeoutSeconds: 1 }), WaitTimeoutError);
  const waiting = cs.verifications.waitForCode({ identity: id, from: "site.test", timeoutSeconds: 60 });
  await sendMail(server.smtp, "no-reply@site.test", id.inbox, "Your code", "Your verification code is 482913.");
  const v = await waiting;
  assert.deepEqual([v.code, v.kind, typeof v.message], ["482913", "code", "number"]);
  assert.equal((await cs.verifications.list({ identity: id })).length, 1);
});

test("events: list, and a stream that resumes from the last event across a dropped connection", async () => {
  const first = await cs.events.list({ types: "identity.created", limit: 1 });
  assert.equal(first.results[0].type, "identity.created");
  // A fetch that cuts the first stream off after its first event.
  const lastEventIds = [];
  const cutting = async (request) => {
    const response = await fetch(request);
    if (!request.url.includes("/api/events/stream/")) return response;
    lastEventIds.push(request.headers.get("Last-Event-ID"));
    if (lastEventIds.length > 1) return response;
    const reader = response.body.getReader();
    let seen = "";
    const body = new ReadableStream({
      async pull(controller) {
        const { value, done } = await reader.read();
        if (done) return controller.close();
        seen += new TextDecoder().decode(value);
        const end = /data:.*\n\n/.exec(seen);
        if (!end) return;
        // Only up to the end of the first event, then the connection breaks.
        controller.enqueue(new TextEncoder().encode(seen.slice(0, end.index + end[0].length)));
        reader.cancel();
        controller.error(new Error("connection reset"));
      },
    });
    return new Response(body, { status: response.status, headers: response.headers });
  };
  const streaming = new Callsign({ baseUrl: server.baseUrl, apiKey: server.key, fetch: cutting });
  const ids = [];
  for await (const ev of streaming.events.stream({ types: ["identity.created"] })) {
    ids.push(Number(ev.id));
    if (ids.length === 3) break;
  }
  assert.equal(lastEventIds.length, 2);
  assert.equal(lastEventIds[0], null);
  assert.equal(lastEventIds[1], String(ids[0]), `ids ${ids}`);
  assert.ok(ids[0] < ids[1] && ids[1] < ids[2], `in order, none repeated: ${ids}`);
  const later = [];
  for await (const ev of cs.events.stream({ types: "identity.created", after: String(ids[1]) })) {
    later.push(ev.id);
    break;
  }
  assert.deepEqual(later, [String(ids[2])]);
});

test("webhooks", async (t) => {
  const received = [];
  const receiver = createServer((req, res) => {
    received.push(req.headers["webhook-id"]);
    res.writeHead(204).end();
  });
  await new Promise((r) => receiver.listen(0, "127.0.0.1", r));
  t.after(() => receiver.close());
  const url = `http://127.0.0.1:${receiver.address().port}/hook`;
  const hook = await cs.webhooks.create({ url, event_types: ["email.received"] });
  assert.equal((await cs.webhooks.get(hook)).url, hook.url);
  assert.equal((await cs.webhooks.update(hook, { description: "mine" })).description, "mine");
  assert.ok((await cs.webhooks.secret(hook)).startsWith("whsec_"));
  await cs.webhooks.rotateSecret(hook);
  assert.equal((await cs.webhooks.test(hook)).delivered, true);
  assert.equal(received.length, 1);
  assert.equal((await cs.webhooks.list()).length, 1);
  assert.equal((await cs.webhooks.deliveries(hook)).results.length, 0);
  await cs.webhooks.delete(hook);
});

test("domains", async () => {
  const d = await cs.domains.create("mail.example.org");
  assert.equal((await cs.domains.get(d.name)).name, "mail.example.org");
  assert.ok((await cs.domains.list()).some((x) => x.name === d.name));
  await cs.domains.delete(d.name);
  await assert.rejects(cs.domains.get(d.name), NotFoundError);
});

test("keys: management and identity keys; an identity key is forbidden to create identities", async () => {
  const mk = await cs.keys.management.create({ name: "ci" });
  assert.equal((await cs.keys.management.get(mk.id)).name, "ci");
  assert.ok((await cs.keys.management.list()).results.some((k) => k.id === mk.id));
  await cs.keys.management.delete(mk.id);
  const id = await cs.identities.create();
  const ik = await cs.keys.identity.create({ identity: id, can_send: false });
  assert.equal((await cs.keys.identity.update(ik.id, { can_send: true })).can_send, true);
  assert.equal((await cs.keys.identity.get(ik.id)).identity, id.uuid);
  assert.equal((await cs.keys.identity.list({ identity: id.uuid })).results.length, 1);
  const agent = new Callsign({ baseUrl: server.baseUrl, apiKey: ik.key });
  assert.equal((await agent.whoami()).identity, id.uuid);
  await assert.rejects(agent.identities.create(), ForbiddenError);
  await cs.keys.identity.delete(ik.id);
});

test("429 and 503 are retried after Retry-After with the same idempotency key, a bounded number of times", async () => {
  const seen = [];
  const busy = (times, status) => async (request) => {
    seen.push(request.headers.get("Idempotency-Key"));
    if (seen.length <= times) return new Response('{"detail":"busy"}', { status, headers: { "Retry-After": "0", "Content-Type": "application/json" } });
    return fetch(request);
  };
  const retrying = new Callsign({ baseUrl: server.baseUrl, apiKey: server.key, fetch: busy(2, 503) });
  await retrying.identities.create();
  assert.equal(seen.length, 3);
  assert.ok(seen[0] && seen.every((k) => k === seen[0]));
  seen.length = 0;
  const limited = new Callsign({ baseUrl: server.baseUrl, apiKey: server.key, fetch: busy(10, 429), maxRetries: 2 });
  await assert.rejects(async () => { await limited.identities.list(); }, (e) => e instanceof RateLimitedError && e.retryAfter === 0);
  assert.equal(seen.length, 3);
});
