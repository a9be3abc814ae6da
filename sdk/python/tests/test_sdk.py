"""The SDK against a real `callsign serve`, through every resource."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import unittest
import unittest.mock
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from callsign import (Callsign, ConflictError, ForbiddenError, NotFoundError, RateLimitedError, ValidationError,
                      WaitTimeoutError)

from .server import REPO, Server, Site, send_mail

server: Server | None = None


def setUpModule():
    global server
    server = Server()


def tearDownModule():
    server.stop()


def local_http(handler: type[BaseHTTPRequestHandler]) -> tuple[ThreadingHTTPServer, str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.server_address[1]}"


class SDKTest(unittest.TestCase):
    def setUp(self):
        self.cs = Callsign(base_url=server.base_url, api_key=server.key)

    def test_defaults_to_the_environment(self):
        env = {"CALLSIGN_SERVER": server.base_url, "CALLSIGN_API_KEY": server.key}
        with unittest.mock.patch.dict(os.environ, env):
            self.assertEqual(Callsign().whoami().key_type, "management")

    def test_identities_and_the_errors_the_api_answers(self):
        cs = self.cs
        ada = cs.identities.create(name="Ada")
        self.assertTrue(ada.inbox.endswith("@agents.test"))
        self.assertEqual(cs.identities.get(ada).uuid, ada.uuid)
        self.assertEqual(cs.identities.update(ada, name="Ada L").name, "Ada L")
        with self.assertRaises(ConflictError):
            cs.identities.create(name="Ada L")
        with self.assertRaises(ValidationError) as e:
            cs.identities.create(domain="nowhere.example")
        self.assertTrue(e.exception.fields["domain"])
        with self.assertRaises(NotFoundError):
            cs.identities.get("00000000-0000-4000-8000-000000000000")
        self.assertTrue(cs.identities.provision_phone(ada).phone.startswith("+"))
        agent = cs.identities.set_voice_agent(ada, response_url="https://agent.example/voice")
        self.assertEqual(cs.identities.voice_agent(ada).response_url, agent.response_url)
        self.assertIn("Ada L", [i.name for i in cs.identities.list()])
        gone = cs.identities.create()
        cs.identities.delete(gone)
        with self.assertRaises(NotFoundError):
            cs.identities.get(gone)

    def test_an_idempotency_key_makes_a_repeated_create_one_identity(self):
        first = self.cs.identities.create(name="Once", idempotency_key="once-1")
        self.assertEqual(self.cs.identities.create(name="Once", idempotency_key="once-1").uuid, first.uuid)

    def test_mail(self):
        cs = self.cs
        a, b = cs.identities.create(), cs.identities.create()
        file = cs.mail.attachments.upload("notes.txt", b"revenue: 42", content_type="text/plain", identity=a)
        sent = cs.mail.send(identity=a, to=b.inbox, subject="Numbers", text="See attached.", attachments=[file])
        self.assertEqual(sent.subject, "Numbers")
        self.assertEqual(cs.mail.attachments.download(file), b"revenue: 42")
        for i in range(2):
            cs.mail.send(identity=a, to=b.inbox, subject=f"More {i}", text="x")
        page = cs.mail.list(identity=a, limit=2)
        self.assertEqual(len(page.results), 2)
        self.assertTrue(page.has_next())
        self.assertEqual(len(page.next_page().results), 1)
        self.assertEqual(sorted(m.subject for m in cs.mail.list(identity=a, limit=2)), ["More 0", "More 1", "Numbers"])
        self.assertEqual(cs.mail.list(identity=a, q="numbers").results[0].id, sent.id)
        self.assertIn(b"Subject: Numbers", cs.mail.raw(sent.id))
        self.assertTrue(cs.mail.update(sent.id, is_read=True).is_read)
        self.assertEqual(cs.mail.get(sent.id).content.strip(), "See attached.")
        reply = cs.mail.reply(sent.id, text="Thanks")
        self.assertTrue(reply.subject.startswith("Re: "))
        cs.mail.reply_all(sent.id, text="Thanks all")
        self.assertTrue(cs.mail.forward(sent.id, to="someone@example.com", text="FYI").subject.startswith("Fwd: "))
        threads = cs.mail.threads.list(identity=a)
        self.assertTrue(cs.mail.threads.get(threads.results[0].thread_id).messages)
        inbox = cs.mail.inboxes.list(identity=a).results[0]
        self.assertEqual(cs.mail.inboxes.get(inbox.id).email, a.inbox)
        extra = cs.mail.inboxes.create(identity=a)
        self.assertFalse(cs.mail.inboxes.check_availability(extra.email)["available"])
        cs.mail.inboxes.delete(extra.id)
        draft = cs.mail.drafts.create(identity=a, to=b.inbox, subject="Draft", text="later")
        self.assertEqual(cs.mail.drafts.update(draft.id, text="now").content, "now")
        self.assertEqual(cs.mail.drafts.get(draft.id).subject, "Draft")
        self.assertEqual(len(cs.mail.drafts.list(identity=a).results), 1)
        self.assertEqual(cs.mail.drafts.send(draft.id).subject, "Draft")
        cs.mail.drafts.delete(cs.mail.drafts.create(identity=a, to=b.inbox, text="never").id)
        cs.mail.delete(reply.id)
        with self.assertRaises(NotFoundError):
            cs.mail.get(reply.id)

    def test_texts_conversations_and_calls(self):
        cs = self.cs
        t = cs.identities.provision_phone(cs.identities.create())
        sms = cs.texts.send(identity=t, to="+14155550100", body="hello")
        self.assertEqual(cs.texts.get(sms.id).body, "hello")
        self.assertEqual(cs.texts.list(identity=t).results[0].id, sms.id)
        self.assertTrue(cs.texts.update(sms.id, is_read=True).is_read)
        conv = cs.texts.conversations.list(identity=t).results[0]
        self.assertEqual(cs.texts.conversations.get(conv.conversation_id).messages[0].body, "hello")
        cs.texts.delete(sms.id)
        self.assertEqual(cs.calls.list(identity=t).count, 0)
        with self.assertRaises(NotFoundError):
            cs.calls.get(999999)

    def test_contacts_page_by_page(self):
        cs = self.cs
        ident = cs.identities.create()
        for name in ["Ann", "Bea", "Cy"]:
            cs.contacts.create(identity=ident, email=f"{name.lower()}@example.com", display_name=name)
        self.assertEqual(cs.contacts.list(identity=ident, limit=2).count, 3)
        self.assertEqual(sorted(c.display_name for c in cs.contacts.list(identity=ident, limit=2)), ["Ann", "Bea", "Cy"])
        ann = cs.contacts.find(identity=ident, email="ann@example.com")
        self.assertEqual(cs.contacts.get(ann).display_name, "Ann")
        self.assertEqual(cs.contacts.update(ann, nickname="A").nickname, "A")
        self.assertEqual(cs.contacts.search("Bea", identity=ident).results[0].display_name, "Bea")
        cs.contacts.delete(ann)

    def test_passwords_with_totp_and_secrets(self):
        cs = self.cs
        ident = cs.identities.create()
        pw = cs.passwords.create(identity=ident, domain="bank.example", username="ada", password="s3cret",
                                 totp="JBSWY3DPEHPK3PXP")
        self.assertEqual(cs.passwords.get(pw).password, "s3cret")
        self.assertEqual(cs.passwords.update(pw, notes="main").notes, "main")
        self.assertRegex(cs.passwords.totp.code(pw).code, r"^\d{6}$")
        self.assertEqual(len(cs.passwords.list(identity=ident).results), 1)
        self.assertEqual(len(cs.passwords.generate(length=24)), 24)
        cs.passwords.delete(pw)
        s = cs.secrets.create(identity=ident, key="token", value="v1")
        self.assertEqual(cs.secrets.update(s, value="v2").value, "v2")
        self.assertEqual(cs.secrets.get(s).value, "v2")
        self.assertEqual(cs.secrets.list(identity=ident, key="token").results[0].uuid, s.uuid)
        cs.secrets.delete(s)

    def test_wait_for_code_finds_the_code_a_site_mails_and_times_out_without_one(self):
        cs = self.cs
        ident = cs.identities.create()
        with self.assertRaises(WaitTimeoutError):
            cs.verifications.wait_for_code(identity=ident, timeout=1)
        timer = threading.Timer(0.5, send_mail, (server.smtp, "no-reply@site.test", ident.inbox, "Your code",
                                                 "Your verification code is 482913."))
        timer.start()
        v = cs.verifications.wait_for_code(identity=ident, sender="site.test", timeout=60)
        timer.join()
        self.assertEqual((v.code, v.kind, type(v.message)), ("482913", "code", int))
        self.assertEqual(v["from"], "no-reply@site.test")
        self.assertEqual(len(cs.verifications.list(ident)), 1)

    def test_events_stream_resumes_from_the_last_event_across_a_dropped_connection(self):
        cs = self.cs
        for _ in range(3):
            cs.identities.create()
        self.assertEqual(cs.events.list(types="identity.created", limit=1).results[0].type, "identity.created")
        transport = cs._client.transport
        opened, real_open = [], transport.open

        def cutting_open(method, path, **kw):
            response = real_open(method, path, **kw)
            if path != "/api/events/stream/":
                return response
            opened.append(kw["headers"].get("Last-Event-ID"))
            if len(opened) > 1:
                return response
            return FirstEventOnly(response)

        transport.open = cutting_open
        ids = []
        for ev in cs.events.stream(types=["identity.created"]):
            ids.append(int(ev.id))
            if len(ids) == 3:
                break
        self.assertEqual(opened, [None, str(ids[0])])
        self.assertTrue(ids[0] < ids[1] < ids[2], ids)
        later = next(iter(cs.events.stream(types="identity.created", after=str(ids[1]))))
        self.assertEqual(later.id, str(ids[2]))

    def test_webhooks(self):
        cs = self.cs
        received = []

        class Receiver(BaseHTTPRequestHandler):
            def do_POST(self):
                received.append(self.headers["webhook-id"])
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass

        httpd, url = local_http(Receiver)
        self.addCleanup(httpd.shutdown)
        hook = cs.webhooks.create(url=url + "/hook", event_types=["email.received"])
        self.assertEqual(cs.webhooks.get(hook.id).url, hook.url)
        self.assertEqual(cs.webhooks.update(hook.id, description="mine").description, "mine")
        self.assertTrue(cs.webhooks.secret(hook.id).startswith("whsec_"))
        cs.webhooks.rotate_secret(hook.id)
        self.assertTrue(cs.webhooks.test(hook.id)["delivered"])
        self.assertEqual(len(received), 1)
        self.assertIn(hook.id, [w.id for w in cs.webhooks.list()])
        self.assertEqual(list(cs.webhooks.deliveries(hook.id)), [])
        cs.webhooks.delete(hook.id)

    def test_domains(self):
        cs = self.cs
        d = cs.domains.create("mail.example.net")
        self.assertEqual(cs.domains.get(d.name).name, "mail.example.net")
        self.assertIn(d.name, [x.name for x in cs.domains.list()])
        cs.domains.delete(d.name)
        with self.assertRaises(NotFoundError):
            cs.domains.get(d.name)

    def test_keys_and_an_identity_key_is_forbidden_to_create_identities(self):
        cs = self.cs
        mk = cs.keys.management.create(name="ci")
        self.assertEqual(cs.keys.management.get(mk.id).name, "ci")
        self.assertIn(mk.id, [k.id for k in cs.keys.management.list()])
        cs.keys.management.delete(mk.id)
        ident = cs.identities.create()
        ik = cs.keys.identity.create(ident, can_send=False)
        self.assertTrue(cs.keys.identity.update(ik.id, can_send=True).can_send)
        self.assertEqual(cs.keys.identity.get(ik.id).identity, ident.uuid)
        self.assertEqual(len(cs.keys.identity.list(identity=ident).results), 1)
        agent = Callsign(base_url=server.base_url, api_key=ik.key)
        self.assertEqual(agent.whoami().identity, ident.uuid)
        with self.assertRaises(ForbiddenError):
            agent.identities.create()
        cs.keys.identity.delete(ik.id)

    def test_429_and_503_are_retried_after_retry_after_with_the_same_key_a_bounded_number_of_times(self):
        keys = []

        class Busy(BaseHTTPRequestHandler):
            def answer(self):
                keys.append(self.headers.get("Idempotency-Key"))
                status = 503 if self.command == "POST" and len(keys) < 3 else 429 if self.command == "GET" else 201
                body = b'{"detail":"busy"}' if status != 201 else json.dumps({"uuid": "u1", "name": "n"}).encode()
                self.send_response(status)
                self.send_header("Retry-After", "0")
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = answer

            def log_message(self, *args):
                pass

        httpd, url = local_http(Busy)
        self.addCleanup(httpd.shutdown)
        self.assertEqual(Callsign(base_url=url, api_key="k").identities.create().uuid, "u1")
        self.assertEqual(len(keys), 3)
        self.assertTrue(keys[0] and keys.count(keys[0]) == 3)
        keys.clear()
        with self.assertRaises(RateLimitedError) as e:
            Callsign(base_url=url, api_key="k", max_retries=2).identities.list()
        self.assertEqual((e.exception.retry_after, len(keys)), (0, 3))

    def test_the_example_agent_signs_up_at_a_site_with_the_sdk_pip_installed(self):
        target = tempfile.mkdtemp(prefix="callsign-pip-")
        self.addCleanup(shutil.rmtree, target, True)
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-index", "--no-build-isolation",
                        "--target", target, os.path.join(REPO, "sdk", "python")], check=True, capture_output=True)
        site = Site(server.smtp)
        self.addCleanup(site.close)
        env = dict(os.environ, CALLSIGN_SERVER=server.base_url, CALLSIGN_API_KEY=server.key, SITE_URL=site.url,
                   PYTHONPATH=target)
        out = subprocess.run([sys.executable, os.path.join(REPO, "examples", "python", "agent.py")], env=env,
                             capture_output=True, text=True, timeout=120)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("signed up", out.stdout)
        self.assertEqual(len(site.confirmed), 1)


class FirstEventOnly:
    """A stream response that breaks after its first event."""

    def __init__(self, response):
        self.response = response

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.response.close()

    def __iter__(self):
        seen_data = False
        for line in self.response:
            yield line
            seen_data = seen_data or line.startswith(b"data:")
            if seen_data and line.strip() == b"":
                raise ConnectionResetError("connection reset")


if __name__ == "__main__":
    unittest.main()
