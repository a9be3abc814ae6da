package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/callsign/callsign/adapters/sqlstore"
	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/ports"
)

// offsetClock is the real time moved by an offset the test sets: leases
// and the 24 hours of a key pass without waiting.
type offsetClock struct{ offset atomic.Int64 }

func (c *offsetClock) Now() time.Time          { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *offsetClock) advance(d time.Duration) { c.offset.Add(int64(d)) }
func (c *offsetClock) install(d *app.Deps)     { d.Clock = c }

// diesBeforeAnswering is a store whose process "dies" right after a
// request's effect committed: the answer is never stored.
type diesBeforeAnswering struct{ ports.Store }

func (diesBeforeAnswering) AnswerIdempotencyKey(context.Context, ports.IdempotencyClaim, int, []byte) error {
	return errors.New("the process died")
}

// sendKeyed sends a JSON request with an Idempotency-Key (none when "").
func (r *running) sendKeyed(method, path, key, idempotencyKey string, body any) (int, http.Header, []byte) {
	r.t.Helper()
	b, _ := json.Marshal(body)
	req, err := http.NewRequest(method, r.baseURL+path, bytes.NewReader(b))
	if err != nil {
		r.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	if idempotencyKey != "" {
		req.Header.Set("Idempotency-Key", idempotencyKey)
	}
	res, err := r.client.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, raw
}

// sameDatabase is the environment of another instance (or a restart) on
// r's database and data directory (its vault key).
func sameDatabase(r *running, env map[string]string) map[string]string {
	out := map[string]string{"CALLSIGN_DATABASE_URL": r.env["CALLSIGN_DATABASE_URL"], "CALLSIGN_DATA_DIR": r.env["CALLSIGN_DATA_DIR"]}
	for k, v := range env {
		out[k] = v
	}
	return out
}

func relayEnv(relay *testRelay) map[string]string {
	return map[string]string{"CALLSIGN_SMTP_RELAY": "smtp://relayuser:relaypass@" + relay.addr, "CALLSIGN_SMTP_RELAY_CA": relay.caFile}
}

// TestIdempotentSend is the keys' wiring: sixteen identical sends with one
// key, at once (split over two instances on PostgreSQL), claim the key in
// the SQL store and send one message over the relay; each is answered 201
// (once run, the others replayed with the same body) or 409 while the
// first runs. The header's other rules (422 for another body, 400 for a
// malformed key) are adapters/httpapi's TestIdempotentSendAtOnce.
func TestIdempotentSend(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		relay := newTestRelay(t)
		relay.listen(t, "127.0.0.1:0")
		r := start(t, d, relayEnv(relay), fastRetry)
		instances := []*running{r}
		if d == sqlstore.Postgres {
			instances = append(instances, start(t, d, sameDatabase(r, relayEnv(relay)), fastRetry))
		}
		mgmt := r.bootstrap("idem@example.com")
		var ident struct{ UUID string }
		r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "Sender"}, &ident)
		path := "/api/email-messages/compose/?identity=" + ident.UUID
		body := map[string]any{"to_email": "alice@example.org", "subject": "Once", "content": "Only once."}

		type answer struct {
			status   int
			replayed string
			body     []byte
		}
		answers := make([]answer, 16)
		var wg sync.WaitGroup
		for i := range answers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s, h, b := instances[i%len(instances)].sendKeyed("POST", path, mgmt, "send-1", body)
				answers[i] = answer{s, h.Get("Idempotent-Replayed"), b}
			}()
		}
		wg.Wait()
		var first []byte
		for _, a := range answers {
			if a.status == 201 && a.replayed == "" {
				if first != nil {
					t.Fatalf("two requests ran: %s and %s", first, a.body)
				}
				first = a.body
			}
		}
		if first == nil {
			t.Fatalf("no request ran: %+v", answers)
		}
		for _, a := range answers {
			switch {
			case a.status == 201 && a.replayed == "true" && !bytes.Equal(a.body, first):
				t.Errorf("a replay differs:\n%s\n%s", a.body, first)
			case a.status == 409 && !strings.Contains(string(a.body), "Idempotency-Key"):
				t.Errorf("409 without naming the header: %s", a.body)
			case a.status != 201 && a.status != 409:
				t.Errorf("status %d: %s", a.status, a.body)
			}
		}
		s, h, b := r.sendKeyed("POST", path, mgmt, "send-1", body)
		if s != 201 || h.Get("Idempotent-Replayed") != "true" || !bytes.Equal(b, first) {
			t.Fatalf("repeat: %d %q %s", s, h.Get("Idempotent-Replayed"), b)
		}
		poll(t, "the message at the relay", func() bool { return len(relay.received()) >= 1 })
		var list apiPage
		r.call("GET", "/api/email-messages/?direction=outgoing&limit=50&identity="+ident.UUID, mgmt, nil, &list)
		if list.Count != 1 {
			t.Fatalf("%d messages stored", list.Count)
		}
		poll(t, "delivery_status sent", func() bool {
			var m apiMessage
			r.call("GET", fmt.Sprintf("/api/email-messages/%d/", list.Results[0].ID), mgmt, nil, &m)
			return m.DeliveryStatus == "sent"
		})
		if n := len(relay.received()); n != 1 {
			t.Fatalf("the relay received %d messages", n)
		}
	})
}

// TestIdempotencyCrashAndExpiry: the process dies after a send committed
// and before its answer was stored. Until the lease ends a repeat is 409;
// after a restart and the lease, the repeat shows the message that was sent
// (replayed), and nothing is sent again. After 24 hours the key is
// forgotten and the same request sends anew.
func TestIdempotencyCrashAndExpiry(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		relay := newTestRelay(t)
		relay.listen(t, "127.0.0.1:0")
		clock := &offsetClock{}
		// The clock jumps a day: the outbox must not give up on the way.
		patient := func(d *app.Deps) {
			d.Retry = app.RetryPolicy{First: 50 * time.Millisecond, Max: 200 * time.Millisecond, GiveUpAfter: 72 * time.Hour}
		}
		dying := start(t, d, relayEnv(relay), patient, clock.install, func(d *app.Deps) { d.Store = diesBeforeAnswering{d.Store} })
		mgmt := dying.bootstrap("crash@example.com")
		var ident struct{ UUID string }
		dying.call("POST", "/api/identities/", mgmt, map[string]any{"name": "Crasher"}, &ident)
		path := "/api/email-messages/compose/?identity=" + ident.UUID
		body := map[string]any{"to_email": "bob@example.org", "subject": "Crash", "content": "Sent before the crash."}
		s, _, b := dying.sendKeyed("POST", path, mgmt, "crash-1", body)
		if s != 201 {
			t.Fatalf("send: %d %s", s, b)
		}
		var sent apiMessage
		json.Unmarshal(b, &sent)
		if s, _, b := dying.sendKeyed("POST", path, mgmt, "crash-1", body); s != 409 {
			t.Fatalf("while the lease holds: %d %s", s, b)
		}
		// The crash this test is about is the lost answer; the outbox's own
		// at-least-once delivery across a crash is not, so the message
		// leaves before the instance stops.
		poll(t, "the message at the relay", func() bool { return len(relay.received()) == 1 })
		dying.stop()

		clock.advance(2 * time.Minute) // past the key's lease
		r := start(t, d, sameDatabase(dying, relayEnv(relay)), patient, clock.install)
		s, h, b := r.sendKeyed("POST", path, mgmt, "crash-1", body)
		var again apiMessage
		json.Unmarshal(b, &again)
		if s != 201 || h.Get("Idempotent-Replayed") != "true" || again.ID != sent.ID || again.MessageID != sent.MessageID {
			t.Fatalf("after the crash: %d %q %s", s, h.Get("Idempotent-Replayed"), b)
		}
		if n := len(relay.received()); n != 1 {
			t.Fatalf("the relay received %d messages", n)
		}

		clock.advance(24 * time.Hour)
		s, h, b = r.sendKeyed("POST", path, mgmt, "crash-1", body)
		var fresh apiMessage
		json.Unmarshal(b, &fresh)
		if s != 201 || h.Get("Idempotent-Replayed") != "" || fresh.ID == sent.ID {
			t.Fatalf("after 24 hours: %d %q %s", s, h.Get("Idempotent-Replayed"), b)
		}
		poll(t, "the second message at the relay", func() bool { return len(relay.received()) == 2 })
	})
}
