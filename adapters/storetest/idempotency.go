package storetest

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

func (f *fixture) claim(c ports.IdempotencyClaim, fingerprint string, now time.Time) (core.IdempotencyOutcome, core.IdempotencyRecord) {
	f.t.Helper()
	o, r, err := f.s.ClaimIdempotencyKey(f.ctx, c, []byte(fingerprint), now, now.Add(core.IdempotencyLease))
	f.must(err)
	return o, r
}

// testIdempotencyKeys: a key is claimed once; its repeats are busy, then
// answered from it; another request under it is a mismatch; it is free
// again after its lease when nothing was made, and after 24 hours.
func testIdempotencyKeys(t *testing.T, f *fixture) {
	a := f.account()
	now := f.now
	c := ports.IdempotencyClaim{AccountID: a.ID, Scope: "POST /api/contacts/ ", Key: "k-1", Token: uuid.NewString()}
	if o, _ := f.claim(c, "body-1", now); o != core.IdempotencyRun {
		t.Fatalf("first claim: %v", o)
	}
	second := c
	second.Token = uuid.NewString()
	if o, _ := f.claim(second, "body-1", now.Add(time.Second)); o != core.IdempotencyBusy {
		t.Fatalf("while running: %v", o)
	}
	if o, _ := f.claim(second, "body-2", now.Add(time.Second)); o != core.IdempotencyMismatch {
		t.Fatalf("another body: %v", o)
	}
	// The same key in another scope or account is another key.
	other := c
	other.Scope = "POST /api/secrets/ "
	if o, _ := f.claim(other, "body-1", now); o != core.IdempotencyRun {
		t.Fatalf("other scope: %v", o)
	}
	f.must(f.s.AnswerIdempotencyKey(f.ctx, c, 201, []byte(`{"id":1}`)))
	o, r := f.claim(second, "body-1", now.Add(2*time.Second))
	if o != core.IdempotencyReplay || r.Status != 201 || string(r.Body) != `{"id":1}` {
		t.Fatalf("answered: %v %+v", o, r)
	}
	// A holder that lost the key can neither answer nor release it.
	f.must(f.s.AnswerIdempotencyKey(f.ctx, second, 500, []byte(`{}`)))
	f.must(f.s.ReleaseIdempotencyKey(f.ctx, second))
	if o, r := f.claim(second, "body-1", now.Add(3*time.Second)); o != core.IdempotencyReplay || r.Status != 201 {
		t.Fatalf("after a stranger's answer and release: %v %+v", o, r)
	}
	// After 24 hours the key is free, whatever it held, and the purge takes
	// expired keys only.
	later := now.Add(core.IdempotencyKeyTTL)
	third := c
	third.Token = uuid.NewString()
	if o, _ := f.claim(third, "body-2", later); o != core.IdempotencyRun {
		t.Fatalf("after 24 hours: %v", o)
	}
	n, err := f.s.PurgeIdempotencyKeys(f.ctx, later, 100)
	f.must(err)
	if n != 1 { // other, claimed at now; c was claimed anew at later
		t.Fatalf("purged %d", n)
	}
	if o, _ := f.claim(other, "body-9", later); o != core.IdempotencyRun {
		t.Fatalf("a purged key: %v", o)
	}
	// Released keys are free at once.
	f.must(f.s.ReleaseIdempotencyKey(f.ctx, third))
	if o, _ := f.claim(second, "body-3", later); o != core.IdempotencyRun {
		t.Fatalf("after release: %v", o)
	}
}

// testIdempotencyEffects: a create whose context carries a claim records
// what it made on the key in its own transaction; a request whose lease
// ran out and whose key was taken over stores nothing.
func testIdempotencyEffects(t *testing.T, f *fixture) {
	a := f.account()
	ident, in := f.identity(a.ID)
	now := f.now
	c := ports.IdempotencyClaim{AccountID: a.ID, Scope: "POST /api/contacts/ ", Key: "k-2", Token: uuid.NewString()}
	f.claim(c, "body", now)
	contact := func(email string) core.Contact {
		return core.Contact{ID: uuid.NewString(), AccountID: a.ID, IdentityID: ident.ID, Email: email, Source: core.ContactManual, CreatedAt: now, UpdatedAt: now}
	}
	first := contact("one@example.com")
	f.must(f.s.CreateContact(ports.WithClaim(f.ctx, &c), first))
	// A second effect of the same request keeps the first.
	f.must(f.s.CreateContact(ports.WithClaim(f.ctx, &c), contact("two@example.com")))
	late := now.Add(core.IdempotencyLease)
	o, r := f.claim(ports.IdempotencyClaim{AccountID: a.ID, Scope: c.Scope, Key: c.Key, Token: uuid.NewString()}, "body", late)
	if o != core.IdempotencyRecover || r.EffectKind != ports.EffectContact || r.EffectID != first.ID {
		t.Fatalf("after the lease, with an effect: %v %+v", o, r)
	}

	// A request that died before its effect leaves the key to a retry, and
	// its own effect, should it come late, is refused and not stored.
	stale := ports.IdempotencyClaim{AccountID: a.ID, Scope: "POST /api/email-messages/compose/ ", Key: "k-3", Token: uuid.NewString()}
	f.claim(stale, "mail", now)
	retry := stale
	retry.Token = uuid.NewString()
	if o, _ := f.claim(retry, "mail", late); o != core.IdempotencyRun {
		t.Fatalf("after the lease, without an effect: %v", o)
	}
	m := core.EmailMessage{AccountID: a.ID, IdentityID: ident.ID, InboxID: in.ID, Header: core.Header{MessageID: uuid.NewString() + "@agents.test",
		FromEmail: in.Email, To: []string{"x@example.com"}, Subject: "once"}, Direction: core.Outgoing, IsRead: true, CreatedAt: late}
	_, err := f.s.SaveMail(ports.WithClaim(f.ctx, &stale), []ports.NewMail{{Message: m, NewThreadID: uuid.NewString()[:12], Raw: []byte("raw")}})
	wantKind(t, err, core.KindConflict)
	list, _, err := f.s.Messages(f.ctx, ports.MessageFilter{Scope: core.Scope{AccountID: a.ID}})
	f.must(err)
	if len(list) != 0 {
		t.Fatalf("a stale request stored %d messages", len(list))
	}
	stored, err := f.s.SaveMail(ports.WithClaim(context.Background(), &retry), []ports.NewMail{{Message: m, NewThreadID: uuid.NewString()[:12], Raw: []byte("raw")}})
	f.must(err)
	f.must(f.s.AnswerIdempotencyKey(f.ctx, retry, 201, []byte(`{}`)))
	if o, r := f.claim(stale, "mail", late.Add(time.Second)); o != core.IdempotencyReplay || r.EffectKind != ports.EffectMessage || r.EffectID != strconv.FormatInt(stored[0].ID, 10) {
		t.Fatalf("after the retry: %v %+v", o, r)
	}
}
