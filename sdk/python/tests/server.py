"""Starts a real `callsign serve` for the tests (SQLite, simulated
telephony, ephemeral loopback ports), and plays a website that signs people
up by mailing them a code through Callsign's SMTP listener."""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import smtplib
import subprocess
import tempfile
import threading
import time
from email.message import EmailMessage
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def binary() -> str:
    """CALLSIGN_TEST_BINARY, else built once into a temporary directory."""
    if not os.environ.get("CALLSIGN_TEST_BINARY"):
        out = os.path.join(tempfile.mkdtemp(prefix="callsign-bin-"), "callsign")
        subprocess.run(["go", "build", "-tags", "nomsgpack", "-o", out, "./cmd/callsign"], cwd=REPO, check=True)
        os.environ["CALLSIGN_TEST_BINARY"] = out
    return os.environ["CALLSIGN_TEST_BINARY"]


class Server:
    """A running service: base_url, smtp (host, port) and a management key."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="callsign-sdk-")
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("CALLSIGN_")}
        self.env.update(CALLSIGN_DATA_DIR=self.dir, CALLSIGN_HTTP_ADDR="127.0.0.1:0", CALLSIGN_SMTP_ADDR="127.0.0.1:0",
                        CALLSIGN_IMAP_ADDR="127.0.0.1:0", CALLSIGN_MAIL_DOMAINS="agents.test", CALLSIGN_LOG_LEVEL="info",
                        CALLSIGN_RATE_LIMIT="off", CALLSIGN_WEBHOOK_ALLOW_PRIVATE="true")
        log_path = os.path.join(self.dir, "serve.log")
        with open(log_path, "w") as log:
            self.process = subprocess.Popen([binary(), "serve"], env=self.env, stdout=subprocess.DEVNULL, stderr=log)
        http = smtp = None
        for _ in range(600):
            with open(log_path) as f:
                text = f.read()
            http = re.search(r'msg="serving the REST API" addr=(\S+)', text)
            smtp = re.search(r'msg="accepting mail over SMTP" addr=(\S+)', text)
            if http and smtp:
                break
            if self.process.poll() is not None:
                raise RuntimeError("callsign serve exited:\n" + text)
            time.sleep(0.1)
        else:
            self.stop()
            raise RuntimeError("callsign serve did not start:\n" + text)
        self.base_url = "http://" + http.group(1)
        host, port = smtp.group(1).rsplit(":", 1)
        self.smtp = (host, int(port))
        out = subprocess.run([binary(), "account", "create", "--email", "sdk@example.com"], env=self.env,
                             check=True, capture_output=True, text=True).stdout
        self.key = json.loads(out)["management_key"]

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def send_mail(smtp: tuple[str, int], sender: str, to: str, subject: str, text: str) -> None:
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = sender, to, subject
    msg.set_content(text)
    with smtplib.SMTP(*smtp) as s:
        s.send_message(msg)


class Site:
    """A website with a sign-up form: POST /signup {email} mails a code to
    the address; POST /confirm {email, code} checks it. `confirmed` lists who did."""

    def __init__(self, smtp: tuple[str, int]):
        codes: dict[str, str] = {}
        self.confirmed: list[str] = []
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                form = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                if self.path == "/signup":
                    code = str(random.randint(100000, 999999))
                    codes[form["email"]] = code
                    send_mail(smtp, "no-reply@site.test", form["email"], "Confirm your account",
                              f"Welcome! Your verification code is {code}. It expires in 10 minutes.")
                    self.send_response(202)
                elif self.path == "/confirm" and codes.get(form.get("email")) == form.get("code"):
                    site.confirmed.append(form["email"])
                    self.send_response(200)
                else:
                    self.send_response(400)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
