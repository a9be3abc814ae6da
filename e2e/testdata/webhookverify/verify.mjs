// Verifies webhook requests with the official Standard Webhooks library.
// Standard input: one JSON object per line, {"secret", "headers", "body"};
// standard output: one line per request, "ok" or "fail: <reason>".
import { Webhook } from "standardwebhooks";
import { createInterface } from "node:readline";

for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  const { secret, headers, body } = JSON.parse(line);
  try {
    new Webhook(secret).verify(body, headers);
    console.log("ok");
  } catch (e) {
    console.log("fail: " + e.message);
  }
}
