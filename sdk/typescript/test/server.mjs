// Starts a real `callsign serve` for the tests (SQLite, simulated
// telephony, ephemeral loopback ports) and plays a website that signs
// people up by mailing them a code through Callsign's SMTP listener.
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const repo = resolve(import.meta.dirname, "../../..");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The binary: CALLSIGN_TEST_BINARY, else built once into a temporary directory. */
function binary() {
  if (process.env.CALLSIGN_TEST_BINARY) return process.env.CALLSIGN_TEST_BINARY;
  const out = join(mkdtempSync(join(tmpdir(), "callsign-bin-")), "callsign");
  execFileSync("go", ["build", "-tags", "nomsgpack", "-o", out, "./cmd/callsign"], { cwd: repo, stdio: "inherit" });
  process.env.CALLSIGN_TEST_BINARY = out;
  return out;
}

/** A running service: { baseUrl, smtp: {host, port}, key, stop() }. */
export async function startServer() {
  const bin = binary();
  const dir = mkdtempSync(join(tmpdir(), "callsign-sdk-"));
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("CALLSIGN_")));
  Object.assign(env, {
    CALLSIGN_DATA_DIR: dir, CALLSIGN_HTTP_ADDR: "127.0.0.1:0", CALLSIGN_SMTP_ADDR: "127.0.0.1:0",
    CALLSIGN_IMAP_ADDR: "127.0.0.1:0", CALLSIGN_MAIL_DOMAINS: "agents.test", CALLSIGN_LOG_LEVEL: "info",
    CALLSIGN_RATE_LIMIT: "off", CALLSIGN_WEBHOOK_ALLOW_PRIVATE: "true",
  });
  const log = join(dir, "serve.log");
  const child = spawn(bin, ["serve"], { env, stdio: ["ignore", "ignore", openSync(log, "w")] });
  let http, smtp;
  for (let i = 0; i < 600 && !(http && smtp); i++) {
    if (child.exitCode !== null) throw new Error("callsign serve exited:\n" + readFileSync(log, "utf8"));
    const text = readFileSync(log, "utf8");
    http = /msg="serving the REST API" addr=(\S+)/.exec(text)?.[1];
    smtp = /msg="accepting mail over SMTP" addr=(\S+)/.exec(text)?.[1];
    if (!(http && smtp)) await sleep(100);
  }
  if (!(http && smtp)) throw new Error("callsign serve did not start:\n" + readFileSync(log, "utf8"));
  const out = execFileSync(bin, ["account", "create", "--email", "sdk@example.com"], { env, encoding: "utf8" });
  const key = JSON.parse(out).management_key;
  const [host, port] = smtp.split(":");
  return {
    baseUrl: `http://${http}`, smtp: { host, port: Number(port) }, key,
    async stop() {
      child.kill("SIGTERM");
      await new Promise((r) => (child.exitCode !== null ? r() : child.once("exit", r)));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Sends one message over SMTP (the minimal dialogue, no TLS). */
export function sendMail({ host, port }, from, to, subject, text) {
  const message = `From: ${from}\r\nTo: ${to}\r\nSubject: ${subject}\r\nMessage-ID: <${crypto.randomUUID()}@site.test>\r\n` +
    `Date: ${new Date().toUTCString()}\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n${text}\r\n`;
  const steps = [`EHLO site.test`, `MAIL FROM:<${from}>`, `RCPT TO:<${to}>`, "DATA", message + ".", "QUIT"];
  return new Promise((resolve, reject) => {
    const socket = connect(port, host);
    let buffer = "";
    socket.setEncoding("utf8");
    socket.on("error", reject);
    socket.on("data", (chunk) => {
      buffer += chunk;
      // A reply is complete at a line "NNN text" (not "NNN-text").
      while (/^\d{3} .*\r\n/m.test(buffer)) {
        const match = /^(\d{3}) .*\r\n/m.exec(buffer);
        const code = Number(match[1]);
        buffer = buffer.slice(match.index + match[0].length);
        if (code >= 400) return reject(new Error(`SMTP ${match[0].trim()}`));
        const next = steps.shift();
        if (next === undefined) return socket.end(resolve);
        socket.write(next + "\r\n");
      }
    });
  });
}

/** A website with a sign-up form: POST /signup {email} mails a code to the
 * address; POST /confirm {email, code} checks it. `confirmed` lists who did. */
export async function startSite(smtp) {
  const codes = new Map();
  const confirmed = [];
  const server = createServer(async (req, res) => {
    let body = "";
    for await (const chunk of req) body += chunk;
    const form = JSON.parse(body || "{}");
    if (req.url === "/signup") {
      const code = String(100000 + Math.floor(Math.random() * 900000));
      codes.set(form.email, code);
      await sendMail(smtp, "no-reply@site.test", form.email, "Confirm your account",
        `Welcome! Your verification code is ${code}. It expires in 10 minutes.`);
      res.writeHead(202).end();
    } else if (req.url === "/confirm" && codes.get(form.email) === form.code) {
      confirmed.push(form.email);
      res.writeHead(200).end("confirmed");
    } else {
      res.writeHead(400).end("wrong code");
    }
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${server.address().port}`, confirmed, close: () => server.close() };
}
