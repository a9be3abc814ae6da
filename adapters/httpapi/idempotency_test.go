package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"mime/multipart"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/ports"
)

// silentHooks takes every webhook URL and sends nothing.
type silentHooks struct{}

func (silentHooks) Check(context.Context, string) error { return nil }
func (silentHooks) Send(context.Context, string, map[string]string, []byte) (ports.WebhookAnswer, error) {
	return ports.WebhookAnswer{StatusCode: 200}, nil
}

// keyed sends a JSON request with an Idempotency-Key.
func (h *harness) keyed(method, path, idempotencyKey string, body any, key string) *response {
	h.t.Helper()
	b, _ := json.Marshal(body)
	req := httptest.NewRequest(method, path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Idempotency-Key", idempotencyKey)
	return h.serve(req)
}

func wantReplayed(t *testing.T, r *response, replayed bool) {
	t.Helper()
	if got := r.Header.Get("Idempotent-Replayed") == "true"; got != replayed {
		t.Fatalf("Idempotent-Replayed %q, want %v: %s", r.Header.Get("Idempotent-Replayed"), replayed, r.Body)
	}
}

// TestIdempotencyRoutes: texts are sent once; a secret's repeat shows the
// secret without its answer having been kept; an upload's retry, written
// with a new multipart boundary, is a repeat; a failed request keeps
// nothing, so its corrected retry runs; identity keys of two identities
// do not share keys; routes that are not idempotent ignore the header.
func TestIdempotencyRoutes(t *testing.T) {
	h := newHarnessWith(t, func(d *app.Deps) { d.WebhookSender = silentHooks{} })
	mgmt := h.account()
	one := h.do("POST", "/api/identities/", map[string]any{"name": "one"}, mgmt).want(t, 201).object(t)["uuid"].(string)
	two := h.do("POST", "/api/identities/", map[string]any{"name": "two"}, mgmt).want(t, 201).object(t)["uuid"].(string)
	keyOne := h.do("POST", "/api/auth/keys/identity/", map[string]any{"identity": one}, mgmt).want(t, 201).object(t)["key"].(string)
	keyTwo := h.do("POST", "/api/auth/keys/identity/", map[string]any{"identity": two}, mgmt).want(t, 201).object(t)["key"].(string)
	h.provision(mgmt, one)

	text := map[string]any{"to": "+14155550100", "body": "once"}
	first := h.keyed("POST", "/api/messages/send/", "sms-1", text, keyOne).want(t, 201)
	wantReplayed(t, first, false)
	again := h.keyed("POST", "/api/messages/send/", "sms-1", text, keyOne).want(t, 201)
	wantReplayed(t, again, true)
	if !bytes.Equal(first.Body, again.Body) {
		t.Fatalf("replay differs:\n%s\n%s", first.Body, again.Body)
	}
	if l := h.do("GET", "/api/messages/", nil, keyOne).want(t, 200).list(t); len(l) != 1 {
		t.Fatalf("%d texts", len(l))
	}

	// The same key of another identity is another key.
	h.keyed("POST", "/api/contacts/", "shared", map[string]any{"email": "a@example.com"}, keyOne).want(t, 201)
	wantReplayed(t, h.keyed("POST", "/api/contacts/", "shared", map[string]any{"email": "a@example.com"}, keyTwo).want(t, 201), false)

	secret := map[string]any{"key": "pin", "value": "4821"}
	made := h.keyed("POST", "/api/secrets/", "secret-1", secret, keyOne).want(t, 201)
	shown := h.keyed("POST", "/api/secrets/", "secret-1", secret, keyOne).want(t, 201)
	wantReplayed(t, shown, true)
	if !bytes.Equal(made.Body, shown.Body) {
		t.Fatalf("secret repeat:\n%s\n%s", made.Body, shown.Body)
	}
	for _, r := range h.store.IdempotencyBodies() {
		if strings.Contains(string(r), "4821") {
			t.Fatalf("a secret's answer was kept: %s", r)
		}
	}

	// A webhook's repeat shows its secret again, which was not kept with the key.
	hook := map[string]any{"url": "https://hooks.example.com/callsign", "event_types": []string{"email.received"}}
	madeHook := h.keyed("POST", "/api/webhooks/", "hook-1", hook, mgmt).want(t, 201)
	againHook := h.keyed("POST", "/api/webhooks/", "hook-1", hook, mgmt).want(t, 201)
	wantReplayed(t, againHook, true)
	if !bytes.Equal(madeHook.Body, againHook.Body) || !strings.Contains(string(madeHook.Body), `"secret"`) {
		t.Fatalf("webhook repeat:\n%s\n%s", madeHook.Body, againHook.Body)
	}
	if l := h.do("GET", "/api/webhooks/", nil, mgmt).want(t, 200).list(t); len(l) != 1 {
		t.Fatalf("%d webhooks", len(l))
	}
	for _, r := range h.store.IdempotencyBodies() {
		if strings.Contains(string(r), `"secret"`) {
			t.Fatalf("a webhook's secret was kept: %s", r)
		}
	}

	upload := func() *response {
		var mp bytes.Buffer
		w := multipart.NewWriter(&mp) // a new random boundary each time
		fw, _ := w.CreateFormFile("file", "notes.txt")
		fw.Write([]byte("the file"))
		w.Close()
		req := httptest.NewRequest("POST", "/api/attachments/", &mp)
		req.Header.Set("Content-Type", w.FormDataContentType())
		req.Header.Set("Authorization", "Bearer "+keyOne)
		req.Header.Set("Idempotency-Key", "upload-1")
		return h.serve(req)
	}
	up := upload().want(t, 201)
	up2 := upload().want(t, 201)
	wantReplayed(t, up2, true)
	if !bytes.Equal(up.Body, up2.Body) {
		t.Fatalf("upload repeat:\n%s\n%s", up.Body, up2.Body)
	}

	// A failed request keeps nothing: the corrected retry runs.
	h.keyed("POST", "/api/email-messages/compose/", "mail-1", map[string]any{"to_email": "not an address", "content": "x"}, keyOne).want(t, 400)
	sent := h.keyed("POST", "/api/email-messages/compose/", "mail-1", map[string]any{"to_email": "bob@example.com", "content": "x"}, keyOne).want(t, 201)
	wantReplayed(t, sent, false)
	h.keyed("POST", "/api/email-messages/compose/", "mail-1", map[string]any{"to_email": "carol@example.com", "content": "x"}, keyOne).want(t, 422)

	// A route that creates nothing new for the caller ignores the header.
	h.keyed("POST", "/api/auth/keys/identity/", "keys-1", map[string]any{"identity": one}, mgmt).want(t, 201)
	wantReplayed(t, h.keyed("POST", "/api/auth/keys/identity/", "keys-1", map[string]any{"identity": one}, mgmt).want(t, 201), false)
}

// TestIdempotentSendAtOnce: sixteen identical sends with one key, at once,
// send one message; each is answered 201 (once run, the others replayed
// with the same body) or 409 naming the header while the first runs. A
// repeat is replayed; another body under the key is 422; a malformed key
// is 400. The same across two instances on PostgreSQL is e2e's
// TestIdempotentSend.
func TestIdempotentSendAtOnce(t *testing.T) {
	h := newHarness(t)
	h.runOutbox()
	mgmt := h.account()
	ident := h.do("POST", "/api/identities/", map[string]any{"name": "Sender"}, mgmt).want(t, 201).object(t)["uuid"].(string)
	send := "/api/email-messages/compose/?identity=" + ident
	body := map[string]any{"to_email": "alice@example.org", "subject": "Once", "content": "Only once."}

	answers := make([]*response, 16)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = h.keyed("POST", send, "send-1", body, mgmt)
		}()
	}
	wg.Wait()
	var first []byte
	for _, a := range answers {
		if a.Status == 201 && a.Header.Get("Idempotent-Replayed") == "" {
			if first != nil {
				t.Fatalf("two requests ran: %s and %s", first, a.Body)
			}
			first = a.Body
		}
	}
	if first == nil {
		t.Fatal("no request ran")
	}
	for _, a := range answers {
		switch {
		case a.Status == 201 && a.Header.Get("Idempotent-Replayed") == "true" && !bytes.Equal(a.Body, first):
			t.Errorf("a replay differs:\n%s\n%s", a.Body, first)
		case a.Status == 409 && !strings.Contains(string(a.Body), "Idempotency-Key"):
			t.Errorf("409 without naming the header: %s", a.Body)
		case a.Status != 201 && a.Status != 409:
			t.Errorf("status %d: %s", a.Status, a.Body)
		}
	}
	again := h.keyed("POST", send, "send-1", body, mgmt).want(t, 201)
	wantReplayed(t, again, true)
	if !bytes.Equal(again.Body, first) {
		t.Fatalf("repeat: %s", again.Body)
	}
	body["content"] = "Something else."
	if r := h.keyed("POST", send, "send-1", body, mgmt).want(t, 422); !strings.Contains(string(r.Body), `"Idempotency-Key"`) {
		t.Fatalf("another body: %s", r.Body)
	}
	for _, bad := range []string{strings.Repeat("k", 256), "tab\there", "caf\u00e9"} {
		if r := h.keyed("POST", send, bad, body, mgmt).want(t, 400); !strings.Contains(string(r.Body), `"Idempotency-Key"`) {
			t.Errorf("key %q: %s", bad, r.Body)
		}
	}
	stored := h.do("GET", "/api/email-messages/?direction=outgoing&limit=50&identity="+ident, nil, mgmt).want(t, 200).results(t)
	if len(stored) != 1 {
		t.Fatalf("%d messages stored", len(stored))
	}
	if m := h.waitFor(mgmt, stored[0]["id"]); m["delivery_status"] != "sent" {
		t.Fatalf("delivery: %v", m)
	}
	if n := len(h.relay.Sent()); n != 1 {
		t.Fatalf("the relay received %d messages", n)
	}
}
