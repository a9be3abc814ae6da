package memory

import (
	"context"
	"slices"
	"time"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// webhookTables are the endpoints and their deliveries.
type webhookTables struct {
	hooks      map[string]*ports.StoredWebhook
	deliveries []*deliveryRow // by id
	nextID     int64
}

type deliveryRow struct {
	core.WebhookDelivery
	event        core.Event
	claimedUntil time.Time
}

func (s *Store) webhookTables() *webhookTables {
	if s.webhooks.hooks == nil {
		s.webhooks.hooks = map[string]*ports.StoredWebhook{}
	}
	return &s.webhooks
}

// writeDeliveries queues e for every endpoint that wants it, as the SQL
// store does in the event's transaction (the caller holds the lock).
func (s *Store) writeDeliveries(e core.Event) {
	t := s.webhookTables()
	ids := make([]string, 0, len(t.hooks))
	for id := range t.hooks {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		w := t.hooks[id]
		if w.Webhook.AccountID != e.AccountID || !w.Webhook.Wants(e) {
			continue
		}
		t.nextID++
		t.deliveries = append(t.deliveries, &deliveryRow{WebhookDelivery: core.WebhookDelivery{ID: t.nextID, WebhookID: id,
			AccountID: e.AccountID, EventSeq: e.Seq, EventType: e.Type, Status: core.WebhookPending, NextAt: e.CreatedAt,
			CreatedAt: e.CreatedAt}, event: e})
	}
}

func cloneWebhook(w ports.StoredWebhook) ports.StoredWebhook {
	w.Webhook.EventTypes, w.Webhook.Identities = slices.Clone(w.Webhook.EventTypes), slices.Clone(w.Webhook.Identities)
	w.Secret, w.PreviousSecret = clone(w.Secret), clone(w.PreviousSecret)
	return w
}

func (s *Store) CreateWebhook(ctx context.Context, w ports.StoredWebhook) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if _, ok := s.accounts[w.Webhook.AccountID]; !ok {
		return core.NotFound("Account not found.")
	}
	record, err := s.effect(ctx)
	if err != nil {
		return err
	}
	c := cloneWebhook(w)
	s.webhookTables().hooks[w.Webhook.ID] = &c
	record(ports.EffectWebhook, w.Webhook.ID)
	return nil
}

func (s *Store) Webhook(_ context.Context, accountID, id string) (ports.StoredWebhook, error) {
	if err := s.lock(); err != nil {
		return ports.StoredWebhook{}, err
	}
	defer s.mu.Unlock()
	w, ok := s.webhookTables().hooks[id]
	if !ok || w.Webhook.AccountID != accountID {
		return ports.StoredWebhook{}, core.NotFound("Webhook not found.")
	}
	return cloneWebhook(*w), nil
}

func (s *Store) Webhooks(_ context.Context, accountID string, page ports.Page) ([]ports.StoredWebhook, int, error) {
	if err := s.lock(); err != nil {
		return nil, 0, err
	}
	defer s.mu.Unlock()
	rows := values(s.webhookTables().hooks, func(w *ports.StoredWebhook) bool { return w.Webhook.AccountID == accountID },
		func(a, b *ports.StoredWebhook) bool {
			return before(a.Webhook.CreatedAt, a.Webhook.ID, b.Webhook.CreatedAt, b.Webhook.ID)
		})
	rows, total := pageOf(rows, page)
	out := make([]ports.StoredWebhook, len(rows))
	for i, r := range rows {
		out[i] = cloneWebhook(*r)
	}
	return out, total, nil
}

func (s *Store) UpdateWebhook(_ context.Context, w ports.StoredWebhook) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	old, ok := s.webhookTables().hooks[w.Webhook.ID]
	if !ok || old.Webhook.AccountID != w.Webhook.AccountID {
		return core.NotFound("Webhook not found.")
	}
	c := cloneWebhook(w)
	c.Webhook.CreatedAt, c.Webhook.LastSuccessAt = old.Webhook.CreatedAt, old.Webhook.LastSuccessAt
	*old = c
	return nil
}

func (s *Store) DeleteWebhook(_ context.Context, accountID, id string) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	t := s.webhookTables()
	w, ok := t.hooks[id]
	if !ok || w.Webhook.AccountID != accountID {
		return core.NotFound("Webhook not found.")
	}
	delete(t.hooks, id)
	t.deliveries = slices.DeleteFunc(t.deliveries, func(d *deliveryRow) bool { return d.WebhookID == id })
	return nil
}

func (s *Store) ClaimDeliveries(_ context.Context, now, leaseUntil time.Time, limit int) ([]ports.DueDelivery, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	t := s.webhookTables()
	due := slices.DeleteFunc(slices.Clone(t.deliveries), func(d *deliveryRow) bool {
		return d.Status != core.WebhookPending || d.NextAt.After(now) || d.claimedUntil.After(now) || !t.hooks[d.WebhookID].Webhook.Enabled
	})
	slices.SortStableFunc(due, func(a, b *deliveryRow) int { return a.NextAt.Compare(b.NextAt) })
	var out []ports.DueDelivery
	for _, d := range due {
		if len(out) == limit {
			break
		}
		d.claimedUntil = leaseUntil
		out = append(out, ports.DueDelivery{Delivery: d.WebhookDelivery, Event: d.event, Webhook: cloneWebhook(*t.hooks[d.WebhookID])})
	}
	return out, nil
}

func (s *Store) SaveAttempts(_ context.Context, ds []core.WebhookDelivery, at time.Time) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	t := s.webhookTables()
	for _, d := range ds {
		if d.Exchange != nil {
			ex := *d.Exchange
			d.Exchange = &ex
		}
		for _, r := range t.deliveries {
			if r.ID == d.ID {
				r.WebhookDelivery, r.claimedUntil = d, time.Time{}
				if w := t.hooks[d.WebhookID]; w != nil && d.Status == core.WebhookDelivered {
					w.Webhook.LastSuccessAt = at
				}
			}
		}
	}
	return nil
}

func (s *Store) Deliveries(_ context.Context, accountID, webhookID string, page ports.Page) ([]core.WebhookDelivery, int, error) {
	if err := s.lock(); err != nil {
		return nil, 0, err
	}
	defer s.mu.Unlock()
	var rows []core.WebhookDelivery
	ds := s.webhookTables().deliveries
	for i := len(ds) - 1; i >= 0; i-- {
		if ds[i].WebhookID == webhookID && ds[i].AccountID == accountID {
			rows = append(rows, ds[i].WebhookDelivery)
		}
	}
	rows, total := pageOf(rows, page)
	return rows, total, nil
}

func (s *Store) RetryDelivery(_ context.Context, accountID, webhookID string, id int64, at time.Time) (core.WebhookDelivery, error) {
	if err := s.lock(); err != nil {
		return core.WebhookDelivery{}, err
	}
	defer s.mu.Unlock()
	for _, d := range s.webhookTables().deliveries {
		if d.ID == id && d.WebhookID == webhookID && d.AccountID == accountID {
			d.Status, d.NextAt, d.claimedUntil = core.WebhookPending, at, time.Time{}
			return d.WebhookDelivery, nil
		}
	}
	return core.WebhookDelivery{}, core.NotFound("Delivery not found.")
}

var _ ports.WebhookStore = (*Store)(nil)
