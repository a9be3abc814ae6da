package httpapi

import (
	"strings"
	"testing"

	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
)

// TestWebhooksPerIdentityKeyAreCapped: an identity key may make at most
// webhooks_per_identity webhooks for its identity (403 past it), another
// identity's key has its own, and a management key only the account's cap.
func TestWebhooksPerIdentityKeyAreCapped(t *testing.T) {
	h := newHarnessWith(t, func(d *app.Deps) {
		d.WebhookSender = silentHooks{}
		d.Quotas = core.Limits{core.QuotaWebhooksPerIdentity: 2}
	})
	tn := newTenants(t, h)
	hook := map[string]any{"url": "https://hooks.example.com/callsign"}
	for range 2 {
		h.do("POST", "/api/webhooks/", hook, tn.keyOne).want(t, 201)
	}
	refused := h.do("POST", "/api/webhooks/", hook, tn.keyOne).want(t, 403).object(t)
	if d, _ := refused["detail"].(string); !strings.Contains(d, "webhooks_per_identity") || !strings.Contains(d, "2 of 2") {
		t.Fatalf("the third of one identity key: %v", refused)
	}
	h.do("POST", "/api/webhooks/", hook, tn.keyTwo).want(t, 201)
	for range 3 {
		h.do("POST", "/api/webhooks/", hook, tn.mgmt).want(t, 201) // the account's cap only
	}
}
