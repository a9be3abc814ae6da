package core

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Webhook is an endpoint that receives the account's events, signed as the
// Standard Webhooks specification says.
type Webhook struct {
	ID          string // uuid
	AccountID   string
	URL         string
	EventTypes  []string // patterns (EventTypeMatches); none: every type
	Identities  []string // uuids; none: every identity's events, and those of none
	Description string
	Enabled     bool
	// DisabledReason says why the service turned the endpoint off.
	DisabledReason string
	// Secret signs every request; PreviousSecret signs beside it until
	// PreviousUntil (a rotation's overlap).
	Secret         string
	PreviousSecret string
	PreviousUntil  time.Time
	// LastSuccessAt is the last delivery a 2xx answered (zero: none yet).
	LastSuccessAt time.Time
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// MaxWebhooks bounds an account's endpoints, whichever keys made them.
const MaxWebhooks = 100

// WebhookRoom says whether p may add an endpoint to an account whose
// endpoints are account: under MaxWebhooks (409), and for an identity key
// under perIdentity of the endpoints it manages (the quota
// webhooks_per_identity, 403; 0 is no such limit), so one identity cannot
// use up the account's.
func WebhookRoom(p Principal, account []Webhook, perIdentity int64) error {
	if len(account) >= MaxWebhooks {
		return Conflict("An account has at most %d webhooks.", MaxWebhooks)
	}
	if p.IsManagement() || perIdentity <= 0 {
		return nil
	}
	var own int64
	for _, w := range account {
		if w.ManagedBy(p) {
			own++
		}
	}
	if own >= perIdentity {
		return &Error{Kind: KindForbidden, Quota: QuotaWebhooksPerIdentity,
			Message: fmt.Sprintf("Quota webhooks_per_identity reached: this identity has %d of %d webhooks. Delete one to add another.", own, perIdentity)}
	}
	return nil
}

// Webhook timing: the overlap of a rotated secret, how long a delivery is
// retried, and the request's timeout.
const (
	WebhookSecretOverlap = 24 * time.Hour
	WebhookGiveUp        = 24 * time.Hour
	WebhookTimeout       = 10 * time.Second
)

// Wants reports whether the endpoint receives e: enabled, of a type it
// names (every type but webhook.test when it names none), of an identity
// it names (any when it names none).
func (w Webhook) Wants(e Event) bool {
	if !w.Enabled || e.Type == WebhookTest {
		return false
	}
	if len(w.Identities) > 0 && !slices.Contains(w.Identities, e.IdentityID) {
		return false
	}
	if len(w.EventTypes) == 0 {
		return true
	}
	for _, p := range w.EventTypes {
		if EventTypeMatches(p, e.Type) {
			return true
		}
	}
	return false
}

// ManagedBy reports whether p may see and change the endpoint: a
// management key of its account, or an identity key whose identity is the
// only one it is limited to.
func (w Webhook) ManagedBy(p Principal) bool {
	if p.AccountID != w.AccountID {
		return false
	}
	return p.IsManagement() || (len(w.Identities) == 1 && w.Identities[0] == p.IdentityID)
}

// SigningSecrets are the secrets that sign a request at now: the current
// one, and the previous one during a rotation's overlap.
func (w Webhook) SigningSecrets(now time.Time) []string {
	if w.PreviousSecret != "" && now.Before(w.PreviousUntil) {
		return []string{w.Secret, w.PreviousSecret}
	}
	return []string{w.Secret}
}

// webhookSecretPrefix marks a Standard Webhooks secret.
const webhookSecretPrefix = "whsec_"

// NewWebhookSecret is "whsec_" and the base64 of 32 random bytes.
func NewWebhookSecret(random io.Reader) (string, error) {
	b := make([]byte, 32)
	if _, err := io.ReadFull(random, b); err != nil {
		return "", err
	}
	return webhookSecretPrefix + base64.StdEncoding.EncodeToString(b), nil
}

// SignWebhook is the webhook-signature header of a request, as the
// Standard Webhooks specification defines it: for each secret,
// "v1," and the base64 HMAC-SHA256 of "{id}.{timestamp}.{body}" keyed
// with the secret's decoded bytes, separated by spaces.
func SignWebhook(secrets []string, id string, timestamp int64, body []byte) string {
	sigs := make([]string, 0, len(secrets))
	for _, s := range secrets {
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, webhookSecretPrefix))
		if err != nil {
			continue // never: secrets are made by NewWebhookSecret
		}
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(id + "." + strconv.FormatInt(timestamp, 10) + "."))
		mac.Write(body)
		sigs = append(sigs, "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	}
	return strings.Join(sigs, " ")
}

// DeliveryStatus values of a webhook delivery.
const (
	WebhookPending   = "pending"
	WebhookDelivered = "delivered"
	WebhookFailed    = "failed"
)

// WebhookDelivery is one event on its way to one endpoint.
type WebhookDelivery struct {
	ID         int64
	WebhookID  string
	AccountID  string
	EventSeq   int64
	EventType  EventType
	Status     string
	Attempts   int
	StatusCode int    // of the last attempt; 0 for none or no answer
	Error      string // of the last attempt: a category, never the remote's text
	LatencyMS  int64  // of the last attempt
	NextAt     time.Time
	CreatedAt  time.Time
	// Exchange is the last attempt's request and answer; nil before one.
	Exchange *WebhookExchange
}

// WebhookExchangeLimit bounds what a delivery keeps of each body and of
// each side's header fields (their names and values together).
const WebhookExchangeLimit = 4 << 10

// WebhookExchange is one attempt as a person debugging an endpoint reads
// it: the request's header fields and body, and the answer's (the status
// is the delivery's StatusCode). Each part is cut at WebhookExchangeLimit.
type WebhookExchange struct {
	RequestHeaders  []HeaderField `json:"request_headers"`
	RequestBody     string        `json:"request_body"`
	ResponseHeaders []HeaderField `json:"response_headers"`
	ResponseBody    string        `json:"response_body"`
}

// HeaderField is one header field of a request or an answer.
type HeaderField struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// NewWebhookExchange keeps an attempt, bounded: header fields sorted by
// name, and each body and each side's fields cut at WebhookExchangeLimit
// bytes (a body on a UTF-8 boundary).
func NewWebhookExchange(request map[string][]string, requestBody []byte, response map[string][]string, responseBody []byte) *WebhookExchange {
	return &WebhookExchange{RequestHeaders: boundedFields(request), RequestBody: boundedText(requestBody),
		ResponseHeaders: boundedFields(response), ResponseBody: boundedText(responseBody)}
}

func boundedFields(h map[string][]string) []HeaderField {
	names := make([]string, 0, len(h))
	for name := range h {
		names = append(names, name)
	}
	slices.Sort(names)
	var fields []HeaderField
	left := WebhookExchangeLimit
	for _, name := range names {
		for _, value := range h[name] {
			if left -= len(name) + len(value); left < 0 {
				return fields
			}
			fields = append(fields, HeaderField{Name: name, Value: value})
		}
	}
	return fields
}

func boundedText(b []byte) string {
	if len(b) <= WebhookExchangeLimit {
		return strings.ToValidUTF8(string(b), "\uFFFD")
	}
	cut := WebhookExchangeLimit
	for cut > 0 && !utf8.RuneStart(b[cut]) {
		cut--
	}
	return strings.ToValidUTF8(string(b[:cut]), "\uFFFD")
}

// webhookBackoff is the wait before the attempt after the n-th failure
// (the last entry repeats): about 5 s, 30 s, 2 min, 10 min, 30 min, 1 h,
// then hourly.
var webhookBackoff = []time.Duration{5 * time.Second, 30 * time.Second, 2 * time.Minute, 10 * time.Minute, 30 * time.Minute, time.Hour}

// WebhookAttempted is a delivery after an attempt at now: delivered on a
// 2xx; otherwise retried after the backoff with ±10% jitter, or failed once
// WebhookGiveUp has passed since the delivery was created.
func WebhookAttempted(d WebhookDelivery, now time.Time, statusCode int, errCategory string, latency time.Duration) WebhookDelivery {
	d.Attempts++
	d.StatusCode, d.Error, d.LatencyMS = statusCode, errCategory, latency.Milliseconds()
	if statusCode >= 200 && statusCode < 300 {
		d.Status, d.Error = WebhookDelivered, ""
		return d
	}
	wait := webhookBackoff[min(d.Attempts, len(webhookBackoff))-1]
	wait += time.Duration((rand.Float64()*0.2 - 0.1) * float64(wait))
	d.NextAt = now.Add(wait)
	if !d.NextAt.Before(d.CreatedAt.Add(WebhookGiveUp)) {
		d.Status = WebhookFailed
	}
	return d
}

// WebhookDisabledReason is why an endpoint is turned off when a delivery
// fails for good: every delivery has failed for WebhookGiveUp (no success
// since then, and it is at least that old). "" keeps it on.
func WebhookDisabledReason(w Webhook, now time.Time) string {
	since := w.LastSuccessAt
	if since.IsZero() {
		since = w.CreatedAt
	}
	if now.Sub(since) < WebhookGiveUp {
		return ""
	}
	return "Every delivery failed for 24 hours; fix the endpoint and enable it again."
}
