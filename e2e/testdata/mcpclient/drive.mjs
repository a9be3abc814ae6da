// Drives Callsign's MCP server with the official TypeScript SDK, as the Go
// test TestMCPWithTheTypeScriptSDK sets it up. It reads its setup from the
// environment variable SETUP (JSON), prints "WAIT_EMAIL <subject>" and
// "WAIT_SMS <text>" when a wait begins (the test then delivers what it waits
// for), and exits non-zero with the first failed check on stderr.
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const setup = JSON.parse(process.env.SETUP);
const mine = setup.mine; // what the key's identity has
const theirs = setup.theirs; // another identity's objects, out of reach

const transport =
  setup.transport === "http"
    ? new StreamableHTTPClientTransport(new URL(setup.url), {
        requestInit: { headers: { Authorization: `Bearer ${setup.key}` } },
      })
    : new StdioClientTransport({ command: setup.command, args: setup.args, env: setup.env, stderr: "inherit" });

const client = new Client({ name: "callsign-interop", version: "1.0.0" });
await client.connect(transport);

// No logging capability: nothing the server does can become a log
// notification, so no vault value can.
assert.equal(client.getServerCapabilities().logging, undefined);
assert.ok(client.getServerCapabilities().resources.subscribe);

const expectedTools = [
  "whoami", "list_emails", "read_email", "send_email", "draft_email", "reply_email", "forward_email", "mark_email_read",
  "list_threads", "read_thread", "wait_for_email", "get_attachment", "send_sms", "list_sms", "list_sms_conversations",
  "read_sms_conversation", "wait_for_sms", "list_contacts", "find_contact", "add_contact", "list_passwords",
  "get_password", "generate_password", "save_password", "list_secrets", "get_secret", "set_secret",
  "get_voice_agent", "set_voice_agent", "list_identities", "wait_for_code", "search_texts", "search_contacts",
  "delete_email", "delete_sms", "delete_contact", "delete_password", "delete_secret", "add_label", "remove_label",
  "place_call", "list_calls", "hangup_call",
];
// The hints a client shows a person before a call: reads change nothing,
// sends reach the world outside.
const outward = ["send_email", "reply_email", "forward_email", "send_sms", "set_voice_agent", "place_call"];
const { tools } = await client.listTools();
assert.deepEqual(tools.map((t) => t.name).sort(), [...expectedTools].sort());
for (const t of tools) {
  assert.ok(t.description && t.description.length > 20, `${t.name} has a description`);
  assert.ok(t.outputSchema, `${t.name} has an output schema`);
  assert.ok(!("identity" in (t.inputSchema.properties ?? {})), `${t.name}: an identity key sees no identity argument`);
  assert.equal(t.annotations.openWorldHint, outward.includes(t.name), `${t.name}: openWorldHint`);
  if (/^(list|read|get|search|find|wait)_|^whoami$/.test(t.name)) {
    assert.equal(t.annotations.readOnlyHint, true, `${t.name}: readOnlyHint`);
  }
}

const called = new Set();
// call calls a tool that must succeed; the SDK checks the result against
// the tool's output schema.
async function call(name, args = {}) {
  called.add(name);
  const res = await client.callTool({ name, arguments: args }, undefined, { timeout: 120000 });
  assert.ok(!res.isError, `${name}(${JSON.stringify(args)}) failed: ${JSON.stringify(res.content)}`);
  return res.structuredContent;
}
// refused calls a tool that must be a tool error, and returns its text.
async function refused(name, args) {
  const res = await client.callTool({ name, arguments: args });
  assert.ok(res.isError, `${name}(${JSON.stringify(args)}) should be refused: ${JSON.stringify(res.structuredContent)}`);
  return res.content[0].text;
}

const who = await call("whoami");
assert.equal(who.key_type, "identity");
assert.equal(who.identity.inbox, mine.inbox);
const idents = await call("list_identities");
assert.deepEqual(idents.identities.map((i) => i.inbox), [mine.inbox], "an identity key lists its own identity");

// Mail: one message with a text attachment arrived over SMTP before.
const list = await call("list_emails");
const first = list.emails.find((e) => e.subject === mine.subject);
assert.ok(first, `list_emails shows ${mine.subject}`);
assert.ok(!list.emails.some((e) => e.subject === theirs.subject), "list_emails shows no other identity's mail");
const msg = await call("read_email", { message_id: first.id });
assert.match(msg.extracted_text, new RegExp(mine.body));
assert.equal(msg.text, undefined, "read_email gives the new text; the whole body on request");
assert.match((await call("read_email", { message_id: first.id, full: true })).text, new RegExp(mine.body));
assert.equal(msg.verification, null, "a message without a code says so");
assert.equal(msg.attachments.length, 1);
const att = await call("get_attachment", { message_id: first.id, uuid: msg.attachments[0].uuid });
assert.equal(att.text, mine.attachmentText);
assert.equal((await call("mark_email_read", { message_id: first.id })).is_read, true);
// Labels: the agent's own state on its mail.
assert.deepEqual((await call("add_label", { message_id: first.id, label: "Needs-Reply" })).labels, ["needs-reply"]);
assert.deepEqual((await call("list_emails", { labels: ["needs-reply"] })).emails.map((e) => e.id), [first.id]);
assert.deepEqual((await call("remove_label", { message_id: first.id, label: "needs-reply" })).labels, []);
const threads = await call("list_threads");
assert.ok(threads.threads.some((t) => t.thread_id === msg.thread_id));
assert.equal((await call("read_thread", { thread_id: msg.thread_id })).messages[0].id, first.id);
const sent = await call("send_email", { to: [theirs.inbox], subject: "From TypeScript", body: "Hello over MCP." });
assert.equal(sent.direction, "outgoing");
const reply = await call("reply_email", { message_id: first.id, body: "Thanks!" });
assert.equal(reply.thread_id, msg.thread_id);
assert.match(reply.subject, /^Re: /);
const fwd = await call("forward_email", { message_id: first.id, to: [theirs.inbox], body: "FYI" });
assert.match(fwd.subject, /^Fwd: /);
const draft = await call("draft_email", { reply_to: first.id, body: "Later." });
assert.equal(draft.kind, "reply");
assert.equal(draft.awaiting_approval, false);

const subject = `wake up ${setup.transport} ${Date.now()}`;
console.log(`WAIT_EMAIL ${subject}`);
const waited = await call("wait_for_email", { subject_contains: subject, timeout_seconds: 60 });
assert.ok(waited.message, "wait_for_email returns the message that arrived");
assert.equal(waited.message.subject, subject);
console.log("GOT_EMAIL");
assert.equal((await call("list_emails", { limit: 1 })).emails[0].subject, subject, "list_emails is newest first");

// Texts: the identity has a simulated number; so has the other one.
const texted = await call("send_sms", { to: [theirs.phone], body: "Hello by SMS" });
assert.equal(texted.messages.length, 1);
const convs = await call("list_sms_conversations");
const conv = convs.conversations.find((c) => c.counterpart === theirs.phone);
assert.ok(conv, "the conversation with the other number is listed");
assert.ok((await call("read_sms_conversation", { conversation_id: conv.conversation_id })).messages.length >= 1);
const code = `${Date.now() % 1000000}`;
console.log(`WAIT_SMS Your code is ${code}`);
const text = await call("wait_for_sms", { body_contains: code, timeout_seconds: 60 });
assert.ok(text.message && text.message.body.includes(code), "wait_for_sms returns the text that arrived");
console.log("GOT_SMS");
assert.equal(text.message.verification.code, code, "a text carries its code");
const got = await call("wait_for_code", { source: "sms", timeout_seconds: 5 });
assert.equal(got.verification.code, code, "wait_for_code finds the code of the text that just came");
assert.equal(got.verification.source, "sms");
const searched = await call("search_texts", { query: `code ${code}` });
assert.ok(searched.count >= 1 && searched.messages.every((m) => m.body.includes(code)), "search_texts finds the text");
const found = await call("list_sms", { query: `code ${code}` });
// The test may have delivered it more than once before the wait returned.
assert.ok(found.count >= 1 && found.messages.length === found.count, "list_sms finds the text by its words");
for (const m of found.messages) {
  assert.deepEqual(m.highlights, [`Your <mark>code</mark> is <mark>${code}</mark>`]);
}

// Contacts.
const added = await call("add_contact", { email: `grace-${setup.transport}@example.org`, display_name: "Grace" });
assert.equal(added.source, "manual");
assert.ok((await call("list_contacts")).contacts.some((c) => c.uuid === added.uuid));
assert.equal((await call("find_contact", { query: `grace-${setup.transport}` })).contacts[0].uuid, added.uuid);
const graces = await call("list_contacts", { query: `grace ${setup.transport}` });
assert.deepEqual(graces.contacts.map((c) => c.uuid), [added.uuid], "list_contacts searches by whole words");
assert.deepEqual(graces.contacts[0].highlights, [`<mark>Grace</mark>`, `<mark>grace</mark>-<mark>${setup.transport}</mark>@example.org`]);
const searchedPeople = await call("search_contacts", { query: `grace ${setup.transport}` });
assert.deepEqual(searchedPeople.contacts.map((c) => c.uuid), [added.uuid], "search_contacts finds the contact");
assert.equal((await call("list_contacts")).contacts[0].uuid, added.uuid, "list_contacts is newest first");

// The vault: values only with reveal.
const domain = `${setup.transport}.example.com`;
await call("save_password", { domain, username: "ada", password: "correct horse battery" });
const pwList = await call("list_passwords");
assert.ok(pwList.passwords.some((p) => p.domain === domain));
assert.ok(!JSON.stringify(pwList).includes("correct horse"), "list_passwords shows no password");
assert.equal((await call("get_password", { domain })).password, null);
assert.equal((await call("get_password", { domain, reveal: true })).password, "correct horse battery");
assert.equal((await call("generate_password", { length: 32 })).password.length, 32);
const key = `token-${setup.transport}`;
assert.equal((await call("set_secret", { key, value: "s3cr3t-value" })).created, true);
assert.equal((await call("set_secret", { key, value: "s3cr3t-value-2" })).created, false);
assert.ok((await call("list_secrets")).secrets.some((s) => s.key === key));
assert.equal((await call("get_secret", { key })).value, null);
assert.equal((await call("get_secret", { key, reveal: true })).value, "s3cr3t-value-2");

// Voice.
assert.equal((await call("get_voice_agent")).identity, who.identity.uuid);
const voice = await call("set_voice_agent", { response_url: "https://agent.example.com/voice", enabled: true });
assert.equal(voice.response_url, "https://agent.example.com/voice");

// Calls: placed (through the simulator), listed newest first, hung up.
const placed = await call("place_call", { to: "+14155550199", response_url: "https://agent.example.com/voice" });
assert.equal(placed.direction, "outgoing");
assert.equal((await call("list_calls")).calls[0].id, placed.id, "list_calls shows the placed call first");
assert.equal((await call("hangup_call", { call_id: placed.id })).id, placed.id);

// Deletes: gone, and a second call finds nothing.
const savedLogin = (await call("list_passwords")).passwords.find((p) => p.domain === domain);
for (const [name, args] of [
  ["delete_email", { message_id: sent.id }], ["delete_sms", { message_id: texted.messages[0].id }],
  ["delete_contact", { uuid: added.uuid }], ["delete_password", { uuid: savedLogin.uuid }], ["delete_secret", { key }],
]) {
  assert.equal((await call(name, args)).deleted, true, `${name} deletes`);
  assert.match(await refused(name, args), /not found/i, `${name} again finds nothing`);
}
assert.match(await refused("read_email", { message_id: sent.id }), /not found/i, "a deleted email is gone");

assert.deepEqual([...called].sort(), [...expectedTools].sort(), "every tool was called");

// Nothing of the other identity is reachable through any tool.
for (const [name, args] of [
  ["read_email", { message_id: theirs.messageId }],
  ["reply_email", { message_id: theirs.messageId, body: "x" }],
  ["forward_email", { message_id: theirs.messageId, to: [mine.inbox] }],
  ["draft_email", { reply_to: theirs.messageId, body: "x" }],
  ["mark_email_read", { message_id: theirs.messageId }],
  ["add_label", { message_id: theirs.messageId, label: "x" }],
  ["remove_label", { message_id: theirs.messageId, label: "x" }],
  ["get_attachment", { message_id: theirs.messageId, uuid: theirs.attachment }],
  ["read_thread", { thread_id: theirs.threadId }],
  ["read_sms_conversation", { conversation_id: theirs.conversationId }],
  ["get_password", { uuid: theirs.passwordUUID, reveal: true }],
  ["get_secret", { uuid: theirs.secretUUID, reveal: true }],
  ["delete_email", { message_id: theirs.messageId }],
  ["delete_password", { uuid: theirs.passwordUUID }],
  ["delete_secret", { uuid: theirs.secretUUID }],
]) {
  assert.match(await refused(name, args), /not found/i, `${name} reaches no other identity`);
}
for (const [name, field] of [
  ["list_emails", "emails"], ["list_threads", "threads"], ["list_sms", "messages"], ["list_sms_conversations", "conversations"],
  ["list_contacts", "contacts"], ["list_passwords", "passwords"], ["list_secrets", "secrets"],
]) {
  const out = JSON.stringify((await call(name))[field]);
  assert.ok(!out.includes(theirs.identity), `${name} lists nothing of the other identity`);
}
assert.match(await refused("get_secret", { key: theirs.secretKey, reveal: true }), /not found/i, "another identity's secret name is not found");
await assert.rejects(client.readResource({ uri: `callsign://threads/${theirs.threadId}` }), "another identity's thread is no resource");
await assert.rejects(client.subscribeResource({ uri: `callsign://threads/${theirs.threadId}` }), /not found/i,
  "another identity's thread cannot be watched");
const inbox = await client.readResource({ uri: "callsign://inbox" });
assert.ok(JSON.parse(inbox.contents[0].text).threads.some((t) => t.thread_id === msg.thread_id));

await client.close();
console.log("OK");
