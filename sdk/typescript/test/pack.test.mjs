// `npm pack` gives a package that installs into an empty project, where a
// user's file (the example agent) type-checks under `tsc --strict` and,
// built, signs up at a site against a real service.
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { copyFileSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { test } from "node:test";
import { startServer, startSite } from "./server.mjs";

const pkg = resolve(import.meta.dirname, "..");
const npm = (args, cwd) => execFileSync("npm", [...args, "--no-audit", "--no-fund", "--silent"], { cwd, encoding: "utf8" });

test("the packed package installs, type-checks a user's file under tsc --strict, and runs the example agent", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "callsign-pack-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  npm(["pack", "--pack-destination", dir], pkg);
  const tarball = readdirSync(dir).find((f) => f.endsWith(".tgz"));
  const project = join(dir, "project");
  execFileSync("mkdir", [project]);
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "user", private: true, type: "module" }));
  // The versions the lock file pins, from the cache `npm ci` filled where it
  // can (not --offline: that cache holds the packages, not the registry's
  // index of them, which a fresh machine has to fetch once).
  const lock = (await import(join(pkg, "package-lock.json"), { with: { type: "json" } })).default.packages;
  const version = (name) => lock[`node_modules/${name}`].version;
  npm(["install", "--prefer-offline", join(dir, tarball), `typescript@${version("typescript")}`, `@types/node@${version("@types/node")}`], project);
  copyFileSync(resolve(pkg, "../../examples/typescript/agent.ts"), join(project, "agent.ts"));
  execFileSync(join(project, "node_modules/.bin/tsc"), ["--strict", "--noEmitOnError", "--target", "es2022", "--module", "nodenext",
    "--moduleResolution", "nodenext", "--types", "node", "agent.ts"], { cwd: project, stdio: "inherit" });

  const server = await startServer();
  t.after(() => server.stop());
  const site = await startSite(server.smtp);
  t.after(() => site.close());
  const env = { ...process.env, CALLSIGN_SERVER: server.baseUrl, CALLSIGN_API_KEY: server.key, SITE_URL: site.url };
  const agent = spawn("node", ["agent.js"], { cwd: project, env, stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  agent.stdout.on("data", (d) => (out += d));
  const code = await new Promise((r) => agent.on("exit", r));
  assert.equal(code, 0, out);
  assert.match(out, /signed up/);
  assert.equal(site.confirmed.length, 1);
});
