"""An agent that signs up at a website with an identity of its own: it gets
an inbox, fills in the site's sign-up form, waits for the verification code
the site mails, and confirms it.

    CALLSIGN_SERVER=http://127.0.0.1:8080 CALLSIGN_API_KEY=... SITE_URL=https://site.example python3 agent.py
"""

import json
import os
import urllib.request

from callsign import Callsign

site = os.environ.get("SITE_URL", "http://127.0.0.1:8000")
cs = Callsign()  # CALLSIGN_SERVER, CALLSIGN_API_KEY


def post(path: str, body: dict) -> int:
    request = urllib.request.Request(site + path, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request) as response:  # raises on 4xx/5xx
        return response.status


me = cs.identities.create(name="Signup Agent")
print(f"I am {me.name} <{me.inbox}>")

post("/signup", {"email": me.inbox})
verification = cs.verifications.wait_for_code(identity=me, timeout=60)
if not verification.code:
    raise SystemExit("the site sent a link, not a code")
print(f"the site sent the code {verification.code}")

post("/confirm", {"email": me.inbox, "code": verification.code})
print("signed up")
