package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"mime/multipart"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/callsign/callsign/app"
)

// silentHooks takes every webhook URL and sends nothing.
type silentHooks struct{}

func (silentHooks) Check(context.Context, string) error { return nil }
func (silentHooks) Send(context.Context, string, map[string]string, []byte) (int, error) {
	return 200, nil
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
