package storetest

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

func (f *fixture) webhook(accountID string, types, identities []string) ports.StoredWebhook {
	f.t.Helper()
	now := f.tick()
	w := ports.StoredWebhook{Webhook: core.Webhook{ID: uuid.NewString(), AccountID: accountID, URL: "https://hooks.example/" + uuid.NewString()[:6],
		EventTypes: types, Identities: identities, Enabled: true, CreatedAt: now, UpdatedAt: now}, Secret: []byte("sealed")}
	f.must(f.s.CreateWebhook(f.ctx, w))
	return w
}

// testWebhookDeliveries: a delivery row is written with each event for
// every enabled endpoint that wants it; due rows are leased to one
// claimer; attempts are recorded; a retry makes a row due again; a
// disabled endpoint's rows wait; deleting an endpoint takes its rows.
func testWebhookDeliveries(t *testing.T, f *fixture) {
	a := f.account()
	ident, in := f.identity(a.ID) // before any webhook: no delivery
	all := f.webhook(a.ID, nil, nil)
	mail := f.webhook(a.ID, []string{"email.*"}, []string{ident.ID})
	off := f.webhook(a.ID, nil, nil)
	off.Webhook.Enabled = false
	f.must(f.s.UpdateWebhook(f.ctx, off))
	other := f.account()
	f.webhook(other.ID, nil, nil)
	f.save(incoming(in, "wh1@x", "s", f.tick(), ""))
	f.identity(a.ID)

	got, err := f.s.Webhook(f.ctx, a.ID, mail.Webhook.ID)
	f.must(err)
	if !slices.Equal(got.Webhook.EventTypes, []string{"email.*"}) || string(got.Secret) != "sealed" || got.Webhook.URL != mail.Webhook.URL {
		t.Fatalf("read back: %+v", got)
	}
	_, err = f.s.Webhook(f.ctx, other.ID, mail.Webhook.ID)
	wantKind(t, err, core.KindNotFound)
	list, n, err := f.s.Webhooks(f.ctx, a.ID, ports.Page{Limit: 10, Count: true})
	f.must(err)
	if n != 3 || len(list) != 3 || list[0].Webhook.ID != all.Webhook.ID {
		t.Fatalf("list: %d %+v", n, list)
	}
	types := func(id string) []string {
		ds, _, err := f.s.Deliveries(f.ctx, a.ID, id, ports.Page{Limit: 50})
		f.must(err)
		return ids(ds, func(d core.WebhookDelivery) string { return string(d.EventType) })
	}
	if got := types(all.Webhook.ID); !slices.Equal(got, []string{"inbox.created", "identity.created", "email.received"}) {
		t.Fatalf("every event, newest first: %v", got)
	}
	if got := types(mail.Webhook.ID); !slices.Equal(got, []string{"email.received"}) {
		t.Fatalf("filtered: %v", got)
	}
	if got := types(off.Webhook.ID); len(got) != 0 {
		t.Fatalf("disabled: %v", got)
	}

	now := time.Now()
	claimed, err := f.s.ClaimDeliveries(f.ctx, now, now.Add(time.Minute), 10)
	f.must(err)
	mine := slices.DeleteFunc(claimed, func(d ports.DueDelivery) bool { return d.Delivery.AccountID != a.ID })
	if len(mine) != 4 || mine[0].Event.Data == nil || mine[0].Webhook.Webhook.ID == "" {
		t.Fatalf("claimed %d: %+v", len(mine), mine)
	}
	again, err := f.s.ClaimDeliveries(f.ctx, now, now.Add(time.Minute), 10)
	f.must(err)
	if slices.ContainsFunc(again, func(d ports.DueDelivery) bool { return d.Delivery.AccountID == a.ID }) {
		t.Fatal("a leased delivery was claimed twice")
	}
	var m ports.DueDelivery
	for _, d := range mine {
		if d.Delivery.WebhookID == mail.Webhook.ID {
			m = d
		}
	}
	failed := core.WebhookAttempted(m.Delivery, now, 500, "status 500", 20*time.Millisecond)
	failed.Exchange = core.NewWebhookExchange(map[string][]string{"webhook-id": {"evt_1"}}, []byte(`{"type":"email.received"}`),
		map[string][]string{"Content-Type": {"text/plain"}}, []byte("boom"))
	f.must(f.s.SaveAttempts(f.ctx, []core.WebhookDelivery{failed}, now))
	ds, _, _ := f.s.Deliveries(f.ctx, a.ID, mail.Webhook.ID, ports.Page{Limit: 5})
	if d := ds[0]; d.Attempts != 1 || d.StatusCode != 500 || d.Error != "status 500" || d.Status != core.WebhookPending || d.LatencyMS != 20 {
		t.Fatalf("after an attempt: %+v", d)
	}
	if ex := ds[0].Exchange; ex == nil || !reflect.DeepEqual(*ex, *failed.Exchange) {
		t.Fatalf("the attempt's exchange: %+v", ex)
	}
	if _, err := f.s.RetryDelivery(f.ctx, a.ID, mail.Webhook.ID, m.Delivery.ID, now); err != nil {
		t.Fatal(err)
	}
	_, err = f.s.RetryDelivery(f.ctx, other.ID, mail.Webhook.ID, m.Delivery.ID, now)
	wantKind(t, err, core.KindNotFound)
	due, err := f.s.ClaimDeliveries(f.ctx, now, now.Add(time.Minute), 10)
	f.must(err)
	if !slices.ContainsFunc(due, func(d ports.DueDelivery) bool { return d.Delivery.ID == m.Delivery.ID }) {
		t.Fatal("a retried delivery is due")
	}
	ok := core.WebhookAttempted(failed, now, 204, "", time.Millisecond)
	f.must(f.s.SaveAttempts(f.ctx, []core.WebhookDelivery{ok}, now))
	got, _ = f.s.Webhook(f.ctx, a.ID, mail.Webhook.ID)
	if !got.Webhook.LastSuccessAt.Equal(now.Truncate(time.Microsecond)) && !got.Webhook.LastSuccessAt.Equal(now) {
		t.Fatalf("last success: %v", got.Webhook.LastSuccessAt)
	}
	f.must(f.s.DeleteWebhook(f.ctx, a.ID, all.Webhook.ID))
	if _, n, _ := f.s.Deliveries(f.ctx, a.ID, all.Webhook.ID, ports.Page{Limit: 5, Count: true}); n != 0 {
		t.Fatalf("deliveries of a deleted endpoint: %d", n)
	}
	wantKind(t, f.s.DeleteWebhook(f.ctx, a.ID, all.Webhook.ID), core.KindNotFound)
}
