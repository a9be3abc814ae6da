package app

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// Webhooks manages the endpoints that receive an account's events, and
// delivers them: durable rows written with each event, claimed by a worker,
// signed as Standard Webhooks says, retried with backoff for a day.
type Webhooks struct {
	base
	store      ports.WebhookStore
	identities *Identities
	events     *Events
	sender     ports.WebhookSender
	cipher     ports.Cipher
	render     func(core.Event) ([]byte, error)
	limits     core.Limits // webhooks_per_identity
}

// WebhookInput is a create or change; nil fields are not given.
type WebhookInput struct {
	URL         *string
	EventTypes  *[]string
	Identities  *[]string
	Description *string
	Enabled     *bool
}

// TestOutcome is what one attempt of webhook.test found.
type TestOutcome struct {
	Delivered  bool
	StatusCode int
	Error      string
	LatencyMS  int64
}

func webhookAAD(id, field string) []byte { return aad("webhooks", field, id) }

// open is the endpoint with its secrets readable.
func (s *Webhooks) open(sw ports.StoredWebhook) (core.Webhook, error) {
	w := sw.Webhook
	secret, err := s.cipher.Open(sw.Secret, webhookAAD(w.ID, "secret"))
	if err != nil {
		return w, err
	}
	w.Secret = string(secret)
	if sw.PreviousSecret != nil {
		prev, err := s.cipher.Open(sw.PreviousSecret, webhookAAD(w.ID, "previous_secret"))
		if err != nil {
			return w, err
		}
		w.PreviousSecret = string(prev)
	}
	return w, nil
}

// seal is the endpoint as the store keeps it.
func (s *Webhooks) seal(w core.Webhook) (ports.StoredWebhook, error) {
	sw := ports.StoredWebhook{Webhook: w}
	sw.Webhook.Secret, sw.Webhook.PreviousSecret = "", ""
	var err error
	if sw.Secret, err = s.cipher.Seal([]byte(w.Secret), webhookAAD(w.ID, "secret")); err != nil {
		return sw, err
	}
	if w.PreviousSecret != "" {
		sw.PreviousSecret, err = s.cipher.Seal([]byte(w.PreviousSecret), webhookAAD(w.ID, "previous_secret"))
	}
	return sw, err
}

// apply checks a create or change against the key and sets it on w.
func (s *Webhooks) apply(ctx context.Context, p core.Principal, w *core.Webhook, in WebhookInput, creating bool) error {
	var problems core.Problems
	if in.URL != nil {
		if err := s.sender.Check(ctx, strings.TrimSpace(*in.URL)); err != nil {
			if !problems.Merge(err) {
				return err
			}
		}
		w.URL = strings.TrimSpace(*in.URL)
	} else if creating {
		problems.Add("url", "This field is required.")
	}
	if in.EventTypes != nil {
		for _, t := range *in.EventTypes {
			if !core.ValidEventPattern(t) {
				problems.Add("event_types", "%q is not an event type; use types such as email.received, or prefixes such as email.*.", t)
			}
		}
		w.EventTypes = slices.Clone(*in.EventTypes)
	}
	if in.Identities != nil {
		w.Identities = nil
		for _, id := range *in.Identities {
			if !p.IsManagement() && id != p.IdentityID {
				problems.Add("identities", "An identity key limits a webhook to its own identity only.")
				continue
			}
			if _, err := s.identities.lookup(ctx, p.AccountID, id); err != nil {
				if isNotFound(err) {
					problems.Add("identities", "No identity %q in this account.", id)
					continue
				}
				return err
			}
			if !slices.Contains(w.Identities, id) {
				w.Identities = append(w.Identities, id)
			}
		}
	}
	if !p.IsManagement() && (len(w.Identities) != 1 || w.Identities[0] != p.IdentityID) {
		w.Identities = []string{p.IdentityID} // an identity key's webhook is limited to its identity
	}
	if in.Description != nil {
		if len(*in.Description) > 500 {
			problems.Add("description", "Ensure this field has no more than 500 characters.")
		}
		w.Description = *in.Description
	}
	if in.Enabled != nil {
		w.Enabled = *in.Enabled
		if w.Enabled {
			w.DisabledReason = ""
		}
	}
	return problems.Err()
}

// Create stores a new endpoint and returns it with its secret.
func (s *Webhooks) Create(ctx context.Context, p core.Principal, in WebhookInput) (core.Webhook, error) {
	all, _, err := s.store.Webhooks(ctx, p.AccountID, ports.Page{Limit: core.MaxWebhooks})
	if err != nil {
		return core.Webhook{}, err
	}
	account := make([]core.Webhook, len(all))
	for i, sw := range all {
		account[i] = sw.Webhook
	}
	if err := core.WebhookRoom(p, account, s.limits[core.QuotaWebhooksPerIdentity]); err != nil {
		return core.Webhook{}, err
	}
	now := s.now()
	w := core.Webhook{ID: s.ids.NewUUID(), AccountID: p.AccountID, Enabled: true, CreatedAt: now, UpdatedAt: now}
	if err := s.apply(ctx, p, &w, in, true); err != nil {
		return core.Webhook{}, err
	}
	if w.Secret, err = core.NewWebhookSecret(s.random); err != nil {
		return core.Webhook{}, err
	}
	sw, err := s.seal(w)
	if err != nil {
		return core.Webhook{}, err
	}
	return w, s.store.CreateWebhook(ctx, sw)
}

// get is an endpoint the key manages, secrets readable.
func (s *Webhooks) get(ctx context.Context, p core.Principal, id string) (core.Webhook, error) {
	sw, err := s.store.Webhook(ctx, p.AccountID, id)
	if err != nil {
		return core.Webhook{}, err
	}
	if !sw.Webhook.ManagedBy(p) {
		return core.Webhook{}, core.NotFound("Webhook not found.")
	}
	return s.open(sw)
}

// Get is an endpoint without its secrets.
func (s *Webhooks) Get(ctx context.Context, p core.Principal, id string) (core.Webhook, error) {
	w, err := s.get(ctx, p, id)
	w.Secret, w.PreviousSecret = "", ""
	return w, err
}

// Secret is an endpoint with its current secret.
func (s *Webhooks) Secret(ctx context.Context, p core.Principal, id string) (core.Webhook, error) {
	w, err := s.get(ctx, p, id)
	w.PreviousSecret = ""
	return w, err
}

// List is the endpoints the key manages, oldest first.
func (s *Webhooks) List(ctx context.Context, p core.Principal) ([]core.Webhook, error) {
	all, _, err := s.store.Webhooks(ctx, p.AccountID, ports.Page{Limit: core.MaxWebhooks})
	var out []core.Webhook
	for _, sw := range all {
		if sw.Webhook.ManagedBy(p) {
			out = append(out, sw.Webhook)
		}
	}
	return out, err
}

// Update changes the fields given.
func (s *Webhooks) Update(ctx context.Context, p core.Principal, id string, in WebhookInput) (core.Webhook, error) {
	w, err := s.get(ctx, p, id)
	if err != nil {
		return core.Webhook{}, err
	}
	if err := s.apply(ctx, p, &w, in, false); err != nil {
		return core.Webhook{}, err
	}
	w.UpdatedAt = s.now()
	return s.save(ctx, w)
}

func (s *Webhooks) save(ctx context.Context, w core.Webhook) (core.Webhook, error) {
	sw, err := s.seal(w)
	if err != nil {
		return core.Webhook{}, err
	}
	if err := s.store.UpdateWebhook(ctx, sw); err != nil {
		return core.Webhook{}, err
	}
	w.Secret, w.PreviousSecret = "", ""
	return w, nil
}

// Delete removes an endpoint and its deliveries.
func (s *Webhooks) Delete(ctx context.Context, p core.Principal, id string) error {
	if _, err := s.get(ctx, p, id); err != nil {
		return err
	}
	return s.store.DeleteWebhook(ctx, p.AccountID, id)
}

// RotateSecret gives the endpoint a new secret; the old one keeps signing
// beside it for core.WebhookSecretOverlap. It returns the new secret.
func (s *Webhooks) RotateSecret(ctx context.Context, p core.Principal, id string) (core.Webhook, error) {
	w, err := s.get(ctx, p, id)
	if err != nil {
		return core.Webhook{}, err
	}
	now := s.now()
	w.PreviousSecret, w.PreviousUntil = w.Secret, now.Add(core.WebhookSecretOverlap)
	if w.Secret, err = core.NewWebhookSecret(s.random); err != nil {
		return core.Webhook{}, err
	}
	w.UpdatedAt = now
	secret := w.Secret
	if w, err = s.save(ctx, w); err != nil {
		return core.Webhook{}, err
	}
	w.Secret = secret
	return w, nil
}

// Test sends a webhook.test event to the endpoint at once and reports the
// attempt; it is not logged and not retried.
func (s *Webhooks) Test(ctx context.Context, p core.Principal, id string) (TestOutcome, error) {
	w, err := s.get(ctx, p, id)
	if err != nil {
		return TestOutcome{}, err
	}
	now := s.now()
	e := core.Event{Name: "test_" + s.ids.NewUUID(), AccountID: w.AccountID, Type: core.WebhookTest, CreatedAt: now,
		Data: []byte(`{"webhook":` + strconv.Quote(w.ID) + `}`)}
	code, errText, took, _ := s.send(ctx, w, e, now)
	return TestOutcome{Delivered: code >= 200 && code < 300, StatusCode: code, Error: errText, LatencyMS: took.Milliseconds()}, nil
}

// send makes one signed request of e to w: the status (0 for none), the
// failure's category ("" on a 2xx), how long it took, and the exchange
// (nil when no request was made).
func (s *Webhooks) send(ctx context.Context, w core.Webhook, e core.Event, now time.Time) (int, string, time.Duration, *core.WebhookExchange) {
	body, err := s.render(e)
	if err != nil {
		return 0, "internal", 0, nil
	}
	ts := now.Unix()
	headers := map[string]string{"webhook-id": e.ID(), "webhook-timestamp": strconv.FormatInt(ts, 10),
		"webhook-signature": core.SignWebhook(w.SigningSecrets(now), e.ID(), ts, body)}
	start := time.Now()
	answer, err := s.sender.Send(ctx, w.URL, headers, body)
	took := time.Since(start)
	exchange := core.NewWebhookExchange(answer.Sent, body, answer.Headers, answer.Body)
	switch code := answer.StatusCode; {
	case err != nil:
		return 0, err.Error(), took, exchange
	case code < 200 || code > 299:
		return code, fmt.Sprintf("status %d", code), took, exchange
	}
	return answer.StatusCode, "", took, exchange
}

// Deliveries lists an endpoint's deliveries, newest first.
func (s *Webhooks) Deliveries(ctx context.Context, p core.Principal, id string, page ports.Page) ([]core.WebhookDelivery, int, error) {
	if _, err := s.get(ctx, p, id); err != nil {
		return nil, 0, err
	}
	return s.store.Deliveries(ctx, p.AccountID, id, page)
}

// Retry makes a delivery due now, whatever its status, and wakes the worker.
func (s *Webhooks) Retry(ctx context.Context, p core.Principal, id string, delivery int64) (core.WebhookDelivery, error) {
	if _, err := s.get(ctx, p, id); err != nil {
		return core.WebhookDelivery{}, err
	}
	d, err := s.store.RetryDelivery(ctx, p.AccountID, id, delivery, s.now())
	if err == nil {
		s.nudge()
	}
	return d, err
}

// Delivery work: a batch of due deliveries is leased for deliveryLease
// (longer than an attempt's timeout), attempted deliveryWorkers at a time.
const (
	deliveryLease   = 3 * core.WebhookTimeout
	deliveryBatch   = 32
	deliveryWorkers = 8
)

// nudge wakes the worker at once (a retry asked for by the API).
func (s *Webhooks) nudge() { s.events.wake() }

// RunDeliveries delivers due webhook deliveries until ctx ends: at once when
// events are committed, and every second for retries that come due. An
// attempt under way when ctx ends finishes (it is bounded by its timeout);
// a leased delivery not attempted is taken again when its lease ends.
func (s *Webhooks) RunDeliveries(ctx context.Context) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		changed := s.events.Changed()
		for ctx.Err() == nil {
			now := s.now()
			due, err := s.store.ClaimDeliveries(ctx, now, now.Add(deliveryLease), deliveryBatch)
			if err != nil {
				if ctx.Err() == nil {
					s.log.Error("webhooks: claiming deliveries failed", "err", err)
				}
				break
			}
			if len(due) == 0 {
				break
			}
			s.attemptAll(context.WithoutCancel(ctx), due)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-changed:
		}
	}
}

// attemptAll attempts claimed deliveries, deliveryWorkers at a time, and
// records the outcomes together; a delivery that failed for good may turn
// its endpoint off.
func (s *Webhooks) attemptAll(ctx context.Context, due []ports.DueDelivery) {
	now := s.now()
	done := make([]core.WebhookDelivery, len(due))
	hooks := make([]core.Webhook, len(due))
	var wg sync.WaitGroup
	sem := make(chan struct{}, deliveryWorkers)
	for i, dd := range due {
		w, err := s.open(dd.Webhook)
		if err != nil {
			s.log.Error("webhooks: opening an endpoint's secret failed", "webhook", dd.Webhook.Webhook.ID, "err", err)
			continue // its lease ends, and it is tried again
		}
		hooks[i] = w
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			code, errText, took, exchange := s.send(ctx, w, dd.Event, now)
			done[i] = core.WebhookAttempted(dd.Delivery, now, code, errText, took)
			done[i].Exchange = exchange
			s.log.Info("webhook delivery attempt", "webhook", w.ID, "delivery", dd.Delivery.ID, "event", dd.Event.ID(),
				"status", done[i].Status, "status_code", code, "error", errText, "ms", took.Milliseconds())
		}()
	}
	wg.Wait()
	var attempted []core.WebhookDelivery
	for _, d := range done {
		if d.ID != 0 {
			attempted = append(attempted, d)
		}
	}
	if err := s.store.SaveAttempts(ctx, attempted, now); err != nil {
		s.log.Error("webhooks: recording attempts failed", "err", err)
		return
	}
	succeeded := map[string]bool{}
	for _, d := range done {
		succeeded[d.WebhookID] = succeeded[d.WebhookID] || d.Status == core.WebhookDelivered
	}
	for i, d := range done {
		if d.Status != core.WebhookFailed || !hooks[i].Enabled || succeeded[d.WebhookID] {
			continue
		}
		w := hooks[i]
		if reason := core.WebhookDisabledReason(w, now); reason != "" {
			w.Enabled, w.DisabledReason, w.UpdatedAt = false, reason, now
			if _, err := s.save(ctx, w); err != nil {
				s.log.Error("webhooks: disabling an endpoint failed", "webhook", w.ID, "err", err)
			}
		}
	}
}

// noWebhooks is the sender of a service built without one: every URL is refused.
type noWebhooks struct{}

func (noWebhooks) Check(context.Context, string) error {
	return core.Unavailable("Webhooks are not configured on this server.")
}

func (noWebhooks) Send(context.Context, string, map[string]string, []byte) (ports.WebhookAnswer, error) {
	return ports.WebhookAnswer{}, fmt.Errorf("webhooks are not configured")
}
