package e2e

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/callsign/callsign/adapters/mailauth"
	"github.com/callsign/callsign/adapters/mailauth/dkimpytest"
	"github.com/callsign/callsign/adapters/mailgun/mailguntest"
	"github.com/callsign/callsign/adapters/resolver/dnstest"
	"github.com/callsign/callsign/adapters/ses/sestest"
	"github.com/callsign/callsign/adapters/sqlstore"
	"github.com/callsign/callsign/adapters/transporttest"
	"github.com/callsign/callsign/core"
)

// mailFake is a provider's fake as the end-to-end tests see it: what it
// accepted (bytes and the id it answered), how often it was asked, and
// the faults it can play: an outage (the next send hears 500) and a hold
// on its answers once it has kept a message.
type mailFake struct {
	env      map[string]string
	accepted func() (raws [][]byte, ids []string)
	requests func() int
	problems func() []string
	outage   func()
	hold     func(time.Duration)
}

func sesFake(t *testing.T) mailFake {
	srv := &sestest.Server{}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return mailFake{
		env: map[string]string{"CALLSIGN_MAIL_PROVIDER": "ses", "CALLSIGN_SES_REGION": sestest.Region, "CALLSIGN_SES_ENDPOINT": hs.URL,
			// The SDK reads these from the process's environment: for a
			// child process; the in-process service has them from TestMain.
			"AWS_ACCESS_KEY_ID": sestest.AccessKeyID, "AWS_SECRET_ACCESS_KEY": sestest.SecretAccessKey, "AWS_EC2_METADATA_DISABLED": "true"},
		accepted: func() (raws [][]byte, ids []string) {
			for _, s := range srv.Sent() {
				raws, ids = append(raws, s.Raw), append(ids, s.MessageID)
			}
			return raws, ids
		},
		requests: srv.Requests, problems: srv.Problems,
		outage: func() { srv.FailNext(1, transporttest.Fail) }, hold: srv.HoldAnswers,
	}
}

func mailgunFake(t *testing.T) mailFake {
	srv := mailguntest.NewServer("agents.test")
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return mailFake{
		env: map[string]string{"CALLSIGN_MAIL_PROVIDER": "mailgun", "CALLSIGN_MAILGUN_API_KEY": mailguntest.APIKey, "CALLSIGN_MAILGUN_API_BASE": hs.URL + "/v3"},
		accepted: func() (raws [][]byte, ids []string) {
			for _, s := range srv.Sent() {
				raws, ids = append(raws, s.Raw), append(ids, strings.Trim(s.ID, "<>"))
			}
			return raws, ids
		},
		requests: srv.Requests, problems: srv.Problems,
		outage: func() { srv.FailNext(1, transporttest.Fail) }, hold: srv.HoldAnswers,
	}
}

func TestMailOutThroughSES(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstore.Dialect) { mailOutThrough(t, d, sesFake(t)) })
}

func TestMailOutThroughMailgun(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstore.Dialect) { mailOutThrough(t, d, mailgunFake(t)) })
}

// mailOutThrough composes a DKIM-signed message with the provider
// configured: the provider's outage (500) is retried, then the provider
// receives our stored bytes exactly, dkimpy verifies them, and the
// recipient is sent with the provider's id.
func mailOutThrough(t *testing.T, d sqlstore.Dialect, fake mailFake) {
	dns := dnstest.Start(t)
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	keyFile := filepath.Join(t.TempDir(), "dkim.pem")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	pair, err := mailauth.KeyPair("prov2026", key)
	if err != nil {
		t.Fatal(err)
	}
	dns.AddTXT(core.DKIMRecordName("prov2026", "agents.test"), 300, core.DKIMRecordValue(pair.Public))
	env := map[string]string{"CALLSIGN_DNS_RESOLVER": dns.Addr, "CALLSIGN_DKIM_KEY_FILE": keyFile, "CALLSIGN_DKIM_SELECTOR": "prov2026"}
	for k, v := range fake.env {
		env[k] = v
	}
	fake.outage()
	r := start(t, d, env, fastRetry)
	mgmt := r.bootstrap("provider@example.com")
	var ident struct{ UUID string }
	r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "Helper"}, &ident)
	var sent apiSent
	if s := r.call("POST", "/api/email-messages/compose/?identity="+ident.UUID, mgmt, map[string]any{"to_email": "ann@example.net", "subject": "Through the provider", "content": "Hi."}, &sent); s != 201 {
		t.Fatalf("compose: %d", s)
	}
	path := fmt.Sprintf("/api/email-messages/%d/?identity=%s", sent.ID, ident.UUID)
	poll(t, "the message sent", func() bool {
		r.call("GET", path, mgmt, nil, &sent)
		return sent.DeliveryStatus == "sent"
	})
	raws, ids := fake.accepted()
	if len(raws) != 1 || fake.requests() != 2 {
		t.Fatalf("the provider accepted %d messages after %d requests; want 1 after an outage and a retry", len(raws), fake.requests())
	}
	_, stored := r.callRaw("GET", fmt.Sprintf("/api/email-messages/%d/raw/?identity=%s", sent.ID, ident.UUID), mgmt, nil)
	if string(raws[0]) != string(stored) {
		t.Fatalf("the provider got other bytes than we stored:\n%q\n%q", raws[0], stored)
	}
	if verdict, ok := dkimpytest.Verify(t, dns.Addr, raws[0]); !ok {
		t.Fatalf("dkimpy refused our signature as the provider received it: %s", verdict)
	}
	if rc := sent.Recipients; len(rc) != 1 || rc[0].Status != "sent" || rc[0].ProviderID == nil || *rc[0].ProviderID != ids[0] {
		t.Fatalf("recipients %+v, want sent with provider id %q", rc, ids[0])
	}
	for _, p := range fake.problems() {
		t.Errorf("a request broke the provider's published reference: %s", p)
	}
}

// TestDoctorMailProviders: doctor checks each provider's credentials with
// one read call against its fake, and fails naming a bad key.
func TestDoctorMailProviders(t *testing.T) {
	t.Parallel()
	r := start(t, sqlstore.SQLite, nil)
	for _, tc := range []struct {
		name string
		fake mailFake
		want string
	}{
		{"ses", sesFake(t), "ok    mail-provider          SES (" + sestest.Region + ") accepts the credentials: production account, sending enabled"},
		{"mailgun", mailgunFake(t), "ok    mail-provider          Mailgun accepts the key: domain agents.test is active; no mail sent"},
	} {
		env := map[string]string{}
		for k, v := range r.env {
			env[k] = v
		}
		for k, v := range tc.fake.env {
			env[k] = v
		}
		lines, errOut, code := doctorLines(t, env)
		if code != 0 || !strings.HasPrefix(lines["mail-provider"], tc.want) {
			t.Errorf("%s: exit %d %s\n%q, want %q…", tc.name, code, errOut, lines["mail-provider"], tc.want)
		}
		if tc.fake.requests() != 0 {
			t.Errorf("%s: doctor sent mail", tc.name)
		}
	}
	env := map[string]string{}
	for k, v := range r.env {
		env[k] = v
	}
	for k, v := range mailgunFake(t).env {
		env[k] = v
	}
	env["CALLSIGN_MAILGUN_API_KEY"] = "key-wrong-0000"
	lines, _, code := doctorLines(t, env)
	if code != 1 || !strings.HasPrefix(lines["mail-provider"], "FAIL  mail-provider          mailgun: Mailgun 401") || strings.Contains(lines["mail-provider"], "key-wrong") {
		t.Errorf("a bad Mailgun key: exit %d, %q", code, lines["mail-provider"])
	}
}
