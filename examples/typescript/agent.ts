// An agent that signs up at a website with an identity of its own: it gets
// an inbox, fills in the site's sign-up form, waits for the verification
// code the site mails, and confirms it.
//
//   CALLSIGN_SERVER=http://127.0.0.1:8080 CALLSIGN_API_KEY=... SITE_URL=https://site.example node agent.js
import { Callsign } from "@callsign/sdk";

const site = process.env.SITE_URL ?? "http://127.0.0.1:8000";
const cs = new Callsign(); // CALLSIGN_SERVER, CALLSIGN_API_KEY

const me = await cs.identities.create({ name: "Signup Agent" });
console.log(`I am ${me.name} <${me.inbox}>`);

const post = (path: string, body: object) =>
  fetch(site + path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });

await post("/signup", { email: me.inbox });
const { code } = await cs.verifications.waitForCode({ identity: me, timeoutSeconds: 60 });
if (!code) throw new Error("the site sent a link, not a code");
console.log(`the site sent the code ${code}`);

const answer = await post("/confirm", { email: me.inbox, code });
if (!answer.ok) throw new Error(`the site refused the code: ${answer.status}`);
console.log("signed up");
