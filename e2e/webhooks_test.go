package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/callsign/callsign/adapters/sqlstore"
	"github.com/callsign/callsign/adapters/sqlstore/sqlstoretest"
)

const webhookVerifierDir = "testdata/webhookverify"

// receiver is a webhook endpoint started by the test: it records every
// request and answers with the status the test sets; with holdStatus it
// answers nothing and holds the request until its connection ends.
type receiver struct {
	t      testing.TB
	ln     net.Listener
	srv    *http.Server
	mu     sync.Mutex
	status int
	got    []hookRequest
	arrive chan struct{}
}

type hookRequest struct {
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
}

// newReceiver listens on addr ("127.0.0.1:0" for any port).
func newReceiver(t testing.TB, addr string, status int) *receiver {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	r := &receiver{t: t, ln: ln, status: status, arrive: make(chan struct{}, 100)}
	r.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, hookRequest{Headers: map[string]string{"webhook-id": req.Header.Get("webhook-id"),
			"webhook-timestamp": req.Header.Get("webhook-timestamp"), "webhook-signature": req.Header.Get("webhook-signature")},
			Body: string(body)})
		status := r.status
		r.mu.Unlock()
		if status == holdStatus {
			r.arrive <- struct{}{}
			<-req.Context().Done()
			return
		}
		w.WriteHeader(status)
		r.arrive <- struct{}{}
	}), ReadHeaderTimeout: 5 * time.Second}
	go r.srv.Serve(ln)
	t.Cleanup(r.close)
	return r
}

// holdStatus makes a receiver hold requests instead of answering them.
const holdStatus = 0

func (r *receiver) url() string { return "http://" + r.ln.Addr().String() + "/hook" }
func (r *receiver) close()      { r.srv.Close() }

func (r *receiver) setStatus(s int) {
	r.mu.Lock()
	r.status = s
	r.mu.Unlock()
}

// wait returns the n-th request (1-based), waiting up to 20 s for it.
func (r *receiver) wait(n int) hookRequest {
	r.t.Helper()
	return r.waitWithin(n, 20*time.Second)
}

func (r *receiver) waitWithin(n int, limit time.Duration) hookRequest {
	r.t.Helper()
	deadline := time.After(limit)
	for {
		r.mu.Lock()
		if len(r.got) >= n {
			got := r.got[n-1]
			r.mu.Unlock()
			return got
		}
		r.mu.Unlock()
		select {
		case <-r.arrive:
		case <-deadline:
			r.t.Fatalf("request %d never arrived", n)
		}
	}
}

// verify runs the official Standard Webhooks verifier (the standardwebhooks
// npm package) over requests with a secret; it returns one verdict each.
func verify(t *testing.T, secret string, reqs ...hookRequest) []string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		missing(t, "node", "Node.js 20 or newer")
	}
	if _, err := os.Stat(filepath.Join(webhookVerifierDir, "node_modules", "standardwebhooks")); err != nil {
		missing(t, "the standardwebhooks verifier", "npm ci --prefix e2e/"+webhookVerifierDir)
	}
	var in strings.Builder
	for _, r := range reqs {
		line, _ := json.Marshal(map[string]any{"secret": secret, "headers": r.Headers, "body": r.Body})
		in.Write(append(line, '\n'))
	}
	cmd := exec.Command(node, "verify.mjs")
	cmd.Dir, cmd.Stdin = webhookVerifierDir, strings.NewReader(in.String())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("verifier: %v\n%s", err, out)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

type apiWebhook struct {
	ID             string   `json:"id"`
	URL            string   `json:"url"`
	EventTypes     []string `json:"event_types"`
	Identities     []string `json:"identities"`
	Enabled        bool     `json:"enabled"`
	DisabledReason *string  `json:"disabled_reason"`
	Secret         string   `json:"secret"`
}

type apiDelivery struct {
	ID            int64   `json:"id"`
	Event         string  `json:"event"`
	Type          string  `json:"type"`
	Status        string  `json:"status"`
	Attempts      int     `json:"attempts"`
	StatusCode    *int    `json:"status_code"`
	Error         *string `json:"error"`
	NextAttemptDT *string `json:"next_attempt_dt"`
}

func (r *running) deliveries(key, hook string) []apiDelivery {
	r.t.Helper()
	var page struct{ Results []apiDelivery }
	if s := r.call("GET", "/api/webhooks/"+hook+"/deliveries/", key, nil, &page); s != 200 {
		r.t.Fatalf("deliveries: %d", s)
	}
	return page.Results
}

// TestWebhooksSignedDurableAndRetried: a webhook receives the event of a
// mail that arrived over SMTP, signed so that the official verifier
// accepts it; an endpoint that is down, then answers 500, then 200 gets
// its delivery in the end with every attempt recorded, across a restart
// of the service; rotation signs with both secrets; the test route
// reports the attempt.
func TestWebhooksSignedDurableAndRetried(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		env := map[string]string{"CALLSIGN_WEBHOOK_ALLOW_PRIVATE": "true"}
		r := start(t, d, env)
		mgmt := r.bootstrap("hooks@example.com")
		var ident struct{ UUID, Inbox string }
		r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "hooked"}, &ident)
		ok := newReceiver(t, "127.0.0.1:0", 200)
		var hook apiWebhook
		if s := r.call("POST", "/api/webhooks/", mgmt, map[string]any{"url": ok.url(), "event_types": []string{"email.*"},
			"description": "mail"}, &hook); s != 201 || !strings.HasPrefix(hook.Secret, "whsec_") || !hook.Enabled {
			t.Fatalf("create: %d %+v", s, hook)
		}
		var shown apiWebhook
		r.call("GET", "/api/webhooks/"+hook.ID+"/", mgmt, nil, &shown)
		if shown.Secret != "" || shown.URL != ok.url() {
			t.Fatalf("a webhook shows its secret only on create: %+v", shown)
		}
		var secret struct{ Secret string }
		if r.call("GET", "/api/webhooks/"+hook.ID+"/secret/", mgmt, nil, &secret); secret.Secret != hook.Secret {
			t.Fatalf("secret route: %q", secret.Secret)
		}

		// A second endpoint that is down: a port nobody listens on.
		down := newReceiver(t, "127.0.0.1:0", 500)
		downAddr := down.ln.Addr().String()
		down.close()
		var flaky apiWebhook
		r.call("POST", "/api/webhooks/", mgmt, map[string]any{"url": "http://" + downAddr + "/hook", "identities": []string{ident.UUID}}, &flaky)

		sendSMTP(t, r.svc.SMTPAddr(), "alice@example.org", []string{ident.Inbox},
			"From: alice@example.org\r\nSubject: Hooked\r\nMessage-ID: <hook-1@example.org>\r\n\r\nHello\r\n")
		first := ok.wait(1)
		var ev struct {
			ID   string
			Type string
			Data map[string]any
		}
		if err := json.Unmarshal([]byte(first.Body), &ev); err != nil || ev.Type != "email.received" || ev.Data["subject"] != "Hooked" ||
			first.Headers["webhook-id"] != ev.ID {
			t.Fatalf("the POST: %+v", first)
		}
		if got := verify(t, hook.Secret, first); got[0] != "ok" {
			t.Fatalf("the official verifier: %v", got)
		}
		if got := verify(t, flaky.Secret, first); got[0] == "ok" {
			t.Fatal("another secret verified the request")
		}
		tampered := first
		tampered.Body = strings.Replace(first.Body, "Hooked", "Hacked", 1)
		if got := verify(t, hook.Secret, tampered); got[0] == "ok" {
			t.Fatal("a changed body verified")
		}

		// The endpoint that is down: its attempt fails (connect), stays pending.
		var ds []apiDelivery
		poll(t, "a failed attempt", func() bool { ds = r.deliveries(mgmt, flaky.ID); return len(ds) > 0 && ds[0].Attempts >= 1 })
		if ds[0].Status != "pending" || ds[0].Error == nil || *ds[0].Error != "connect" || ds[0].NextAttemptDT == nil || ds[0].StatusCode != nil {
			t.Fatalf("after the endpoint was down: %+v", ds[0])
		}
		// It comes up answering 500, while the service restarts.
		r.stop()
		back := newReceiver(t, downAddr, 500)
		r = start(t, d, sameDatabase(r, env))
		var retried apiDelivery
		r.call("POST", fmt.Sprintf("/api/webhooks/%s/deliveries/%d/retry/", flaky.ID, ds[0].ID), mgmt, nil, &retried)
		back.wait(1)
		// The restarted worker may make its own attempt beside the retry:
		// wait for one that reached the endpoint.
		poll(t, "the 500 recorded", func() bool {
			ds = r.deliveries(mgmt, flaky.ID)
			return ds[0].Attempts >= 2 && ds[0].StatusCode != nil
		})
		if ds[0].Status != "pending" || ds[0].StatusCode == nil || *ds[0].StatusCode != 500 || *ds[0].Error != "status 500" {
			t.Fatalf("after a 500: %+v", ds[0])
		}
		back.setStatus(204)
		r.call("POST", fmt.Sprintf("/api/webhooks/%s/deliveries/%d/retry/", flaky.ID, ds[0].ID), mgmt, nil, nil)
		poll(t, "delivered", func() bool { ds = r.deliveries(mgmt, flaky.ID); return ds[0].Status == "delivered" })
		if ds[0].Attempts < 3 || *ds[0].StatusCode != 204 || ds[0].Error != nil || ds[0].Type != "email.received" {
			t.Fatalf("delivered: %+v", ds[0])
		}
		if got := verify(t, flaky.Secret, back.wait(2)); got[0] != "ok" {
			t.Fatalf("after the restart: %v", got)
		}

		// Rotation: both secrets sign for a day.
		var rotated apiWebhook
		r.call("POST", "/api/webhooks/"+hook.ID+"/rotate-secret/", mgmt, nil, &rotated)
		if rotated.Secret == hook.Secret || !strings.HasPrefix(rotated.Secret, "whsec_") {
			t.Fatalf("rotated: %+v", rotated)
		}
		var test struct {
			Delivered  bool
			StatusCode *int `json:"status_code"`
			Error      *string
		}
		if s := r.call("POST", "/api/webhooks/"+hook.ID+"/test/", mgmt, nil, &test); s != 200 || !test.Delivered || *test.StatusCode != 200 {
			t.Fatalf("test: %d %+v", s, test)
		}
		probe := ok.wait(2)
		if !strings.Contains(probe.Body, `"type":"webhook.test"`) || len(strings.Fields(probe.Headers["webhook-signature"])) != 2 {
			t.Fatalf("the test request: %+v", probe)
		}
		if got := verify(t, rotated.Secret, probe); got[0] != "ok" {
			t.Fatalf("the new secret: %v", got)
		}
		if got := verify(t, hook.Secret, probe); got[0] != "ok" {
			t.Fatalf("the old secret during the overlap: %v", got)
		}
		ok.setStatus(500)
		r.call("POST", "/api/webhooks/"+hook.ID+"/test/", mgmt, nil, &test)
		if test.Delivered || *test.StatusCode != 500 {
			t.Fatalf("a failing test: %+v", test)
		}
		var tests []apiDelivery
		if tests = r.deliveries(mgmt, hook.ID); len(tests) != 1 {
			t.Fatalf("tests are not deliveries: %+v", tests)
		}
	})
}

// TestWebhooksRefuseTheOperatorsNetworkAndFollowScope: without
// CALLSIGN_WEBHOOK_ALLOW_PRIVATE, URLs that reach loopback, private,
// link-local or metadata addresses are 400; identity keys manage only the
// webhooks of their identity.
func TestWebhooksRefuseTheOperatorsNetworkAndFollowScope(t *testing.T) {
	t.Parallel()
	r := start(t, sqlstore.SQLite, nil)
	mgmt := r.bootstrap("ssrf@example.com")
	for _, u := range []string{"http://127.0.0.1/x", "http://localhost:8080/", "http://169.254.169.254/latest/meta-data/", "http://10.1.2.3/",
		"http://[::1]/", "http://0x7f.1/", "ftp://example.com/", "https://user:pw@example.com/", "not a url"} {
		var problem map[string][]string
		if s := r.call("POST", "/api/webhooks/", mgmt, map[string]any{"url": u}, &problem); s != 400 || len(problem["url"]) == 0 {
			t.Errorf("%s: %d %v", u, s, problem)
		}
	}
	var a, b struct{ UUID string }
	r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "a"}, &a)
	r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "b"}, &b)
	keyA, keyB := identityKey(r, mgmt, a.UUID), identityKey(r, mgmt, b.UUID)
	if s := r.call("POST", "/api/webhooks/", keyA, map[string]any{"url": "http://127.0.0.1/x"}, nil); s != 400 {
		t.Fatalf("identity key, loopback: %d", s)
	}
	// An identity key may not reach beyond its identity.
	if s := r.call("POST", "/api/webhooks/", keyA, map[string]any{"url": "https://93.184.215.14/", "identities": []string{b.UUID}}, nil); s != 400 {
		t.Fatalf("another identity: %d", s)
	}
	var own apiWebhook
	if s := r.call("POST", "/api/webhooks/", keyA, map[string]any{"url": "https://93.184.215.14/"}, &own); s != 201 ||
		len(own.Identities) != 1 || own.Identities[0] != a.UUID {
		t.Fatalf("identity key's webhook: %d %+v", s, own)
	}
	var list []apiWebhook
	if r.call("GET", "/api/webhooks/", keyB, nil, &list); len(list) != 0 {
		t.Fatalf("b sees %+v", list)
	}
	if s := r.call("GET", "/api/webhooks/"+own.ID+"/", keyB, nil, nil); s != 404 {
		t.Fatalf("b reads a's webhook: %d", s)
	}
	if r.call("GET", "/api/webhooks/", mgmt, nil, &list); len(list) != 1 {
		t.Fatalf("management key sees %+v", list)
	}
	var off apiWebhook
	if s := r.call("PATCH", "/api/webhooks/"+own.ID+"/", keyA, map[string]any{"enabled": false, "event_types": []string{"sms.*"}}, &off); s != 200 ||
		off.Enabled || off.EventTypes[0] != "sms.*" {
		t.Fatalf("patch: %d %+v", s, off)
	}
	if s := r.call("PATCH", "/api/webhooks/"+own.ID+"/", keyA, map[string]any{"event_types": []string{"mail.*"}}, nil); s != 400 {
		t.Fatalf("unknown types: %d", s)
	}
	if s := r.call("DELETE", "/api/webhooks/"+own.ID+"/", keyB, nil, nil); s != 404 {
		t.Fatalf("b deletes a's webhook: %d", s)
	}
	if s := r.call("DELETE", "/api/webhooks/"+own.ID+"/", keyA, nil, nil); s != 204 {
		t.Fatalf("delete: %d", s)
	}
}

// TestWebhooksSurviveKill9 runs the service as a child process and kills
// it with SIGKILL twice over: once between attempts (the endpoint answered
// 500, one attempt recorded) and once while an attempt is in flight (the
// endpoint holds the request). Started again on the same database, the
// service delivers both, signed for the official verifier: the first once
// its retry comes due, the second once the dead process's lease on it runs
// out, under the same webhook-id as the request the kill cut off. The
// dialects run side by side: each mostly waits for that 30 s lease.
func TestWebhooksSurviveKill9(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		env := childEnv(t, t.TempDir())
		env["CALLSIGN_DATABASE_URL"] = sqlstoretest.URL(t, d)
		env["CALLSIGN_MAIL_DOMAINS"] = "agents.test"
		env["CALLSIGN_WEBHOOK_ALLOW_PRIVATE"] = "true"
		first := startChild(t, env)
		r := asRunning(t, first, env)
		mgmt := r.bootstrap("kill9@example.com")
		var failing, holding struct{ UUID, Inbox string }
		r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "failing"}, &failing)
		r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "holding"}, &holding)
		answers500 := newReceiver(t, "127.0.0.1:0", 500)
		holds := newReceiver(t, "127.0.0.1:0", holdStatus)
		var retried, cutOff apiWebhook
		r.call("POST", "/api/webhooks/", mgmt, map[string]any{"url": answers500.url(), "identities": []string{failing.UUID}}, &retried)
		r.call("POST", "/api/webhooks/", mgmt, map[string]any{"url": holds.url(), "identities": []string{holding.UUID}}, &cutOff)

		smtpAddr := first.addr(t, "accepting mail over SMTP")
		sendSMTP(t, smtpAddr, "alice@example.org", []string{failing.Inbox},
			"From: alice@example.org\r\nSubject: Between attempts\r\nMessage-ID: <kill-1@example.org>\r\n\r\nHello\r\n")
		answers500.wait(1)
		poll(t, "the 500 recorded", func() bool { ds := r.deliveries(mgmt, retried.ID); return len(ds) == 1 && ds[0].Attempts >= 1 })
		sendSMTP(t, smtpAddr, "alice@example.org", []string{holding.Inbox},
			"From: alice@example.org\r\nSubject: In flight\r\nMessage-ID: <kill-2@example.org>\r\n\r\nHello\r\n")
		inFlight := holds.wait(1)

		if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-first.exited
		killed := time.Now()
		answers500.setStatus(200)
		holds.setStatus(200)
		r = asRunning(t, startChild(t, env), env)

		var ds []apiDelivery
		poll(t, "the retried delivery", func() bool { ds = r.deliveries(mgmt, retried.ID); return ds[0].Status == "delivered" })
		if ds[0].Attempts < 2 || *ds[0].StatusCode != 200 || ds[0].Error != nil {
			t.Fatalf("delivered after the kill between attempts: %+v", ds[0])
		}
		t.Logf("the retried delivery arrived %v after the kill", time.Since(killed))
		answers500.mu.Lock()
		n := len(answers500.got)
		answers500.mu.Unlock()
		if got := verify(t, retried.Secret, answers500.wait(n)); got[0] != "ok" {
			t.Fatalf("the official verifier: %v", got)
		}

		// The cut-off attempt's lease (three attempt timeouts) has to run out first.
		again := holds.waitWithin(2, 60*time.Second)
		t.Logf("the cut-off delivery arrived again %v after the kill", time.Since(killed))
		if again.Headers["webhook-id"] != inFlight.Headers["webhook-id"] {
			t.Fatalf("a redelivery under webhook-id %q, first %q", again.Headers["webhook-id"], inFlight.Headers["webhook-id"])
		}
		if got := verify(t, cutOff.Secret, again); got[0] != "ok" {
			t.Fatalf("the official verifier: %v", got)
		}
		poll(t, "the cut-off delivery recorded", func() bool { ds = r.deliveries(mgmt, cutOff.ID); return ds[0].Status == "delivered" })
		if ds[0].Attempts < 1 || *ds[0].StatusCode != 200 {
			t.Fatalf("delivered after the kill in flight: %+v", ds[0])
		}
	})
}
