package ports

import (
	"context"
	"time"

	"github.com/callsign/callsign/core"
)

// StoredWebhook is an endpoint as stores keep it: Secret and
// PreviousSecret of Webhook are empty, their sealed forms are beside it.
type StoredWebhook struct {
	Webhook        core.Webhook
	Secret         []byte // sealed
	PreviousSecret []byte // sealed; nil without a rotation
}

// DueDelivery is a delivery claimed for an attempt, with what it needs.
type DueDelivery struct {
	Delivery core.WebhookDelivery
	Event    core.Event
	Webhook  StoredWebhook
}

// WebhookStore keeps webhook endpoints and their deliveries. The delivery
// rows are written by the event-writing stores, with each event, for every
// endpoint of the account that core.Webhook.Wants it.
type WebhookStore interface {
	CreateWebhook(ctx context.Context, w StoredWebhook) error
	Webhook(ctx context.Context, accountID, id string) (StoredWebhook, error)
	// Webhooks lists an account's endpoints, oldest first.
	Webhooks(ctx context.Context, accountID string, page Page) ([]StoredWebhook, int, error)
	// UpdateWebhook saves every mutable field (URL, filters, description,
	// enabled and why not, secrets).
	UpdateWebhook(ctx context.Context, w StoredWebhook) error
	// DeleteWebhook removes an endpoint with its deliveries.
	DeleteWebhook(ctx context.Context, accountID, id string) error

	// ClaimDeliveries leases up to limit pending deliveries of enabled
	// endpoints that are due,
	// so no other worker (of this instance or another) takes them until the
	// lease ends.
	ClaimDeliveries(ctx context.Context, now, leaseUntil time.Time, limit int) ([]DueDelivery, error)
	// SaveAttempts records attempts' outcomes (core.WebhookAttempted) and
	// ends their leases, in one transaction; a delivered one moves its
	// endpoint's LastSuccessAt.
	SaveAttempts(ctx context.Context, ds []core.WebhookDelivery, at time.Time) error
	// Deliveries lists an endpoint's deliveries, newest first.
	Deliveries(ctx context.Context, accountID, webhookID string, page Page) ([]core.WebhookDelivery, int, error)
	// RetryDelivery makes a delivery pending and due at at.
	RetryDelivery(ctx context.Context, accountID, webhookID string, id int64, at time.Time) (core.WebhookDelivery, error)
}

// WebhookSender makes the requests of webhooks, under the outbound
// destination policy.
type WebhookSender interface {
	// Check refuses a URL that is not http(s) or whose host is refused by
	// the policy: a core Invalid error on "url".
	Check(ctx context.Context, rawURL string) error
	// Send POSTs body with headers, without following redirects, within
	// core.WebhookTimeout. It returns the request's header fields as sent
	// and the answer, or an error whose text is a category (connect,
	// timeout, refused destination, …), never the remote's own words.
	Send(ctx context.Context, rawURL string, headers map[string]string, body []byte) (WebhookAnswer, error)
}

// WebhookAnswer is one request of a webhook as made, and its answer: the
// status, header fields and up to core.WebhookExchangeLimit bytes of body
// (zero when no answer came).
type WebhookAnswer struct {
	Sent       map[string][]string
	StatusCode int
	Headers    map[string][]string
	Body       []byte
}
