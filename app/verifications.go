package app

import (
	"context"
	"time"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// Verifications lists the one-time codes and sign-in links an identity
// received by mail and by text (found once at receipt: Receiving.inboundCopy,
// SMS.Receive), and lets a caller wait for the next one.
type Verifications struct {
	base
	store      ports.VerificationStore
	identities *Identities
	// arrived is signalled, per identity, when a message carrying a
	// verification is stored by this process.
	arrived *changeFeed[string]
	// events tells of mail and texts stored by any instance sharing the
	// database (the account's event feed: NOTIFY on PostgreSQL).
	events *Events
}

// verificationEvents are the events whose messages may carry a verification.
var verificationEvents = []string{string(core.EmailReceived), string(core.SMSReceivedEvent)}

// verificationRecheck is how often a waiting caller looks again while the
// event feed cannot be followed.
const verificationRecheck = 2 * time.Second

// VerificationQuery is what a caller asks of the list.
type VerificationQuery struct {
	After  time.Time
	From   string
	Source core.VerificationSource
	Limit  int
	// Wait holds an empty answer up to this long for a verification to arrive.
	Wait time.Duration
}

// List answers the verifications of identity id, newest first; with Wait,
// an empty answer waits until one matching the query arrives or Wait ends.
func (s *Verifications) List(ctx context.Context, p core.Principal, id string, q VerificationQuery) ([]core.ReceivedVerification, error) {
	ident, err := s.identities.Get(ctx, p, id)
	if err != nil {
		return nil, err
	}
	f := ports.VerificationFilter{AccountID: ident.AccountID, IdentityID: ident.ID, After: q.After, From: q.From, Source: q.Source, Limit: q.Limit}
	if q.Wait <= 0 {
		return s.store.Verifications(ctx, f)
	}
	// Both joined before the first look, so nothing stored in between is
	// missed: this process's deliveries, and the identity's received mail
	// and texts from any instance through the account's shared feed.
	arrived, stop := s.arrived.watch(ident.ID)
	defer stop()
	recheck := time.NewTicker(verificationRecheck)
	recheck.Stop() // started only when the feed cannot be followed
	defer recheck.Stop()
	var received <-chan LiveEvent
	if sub, err := s.events.Subscribe(ctx, p, EventQuery{Types: verificationEvents, Identity: ident.ID}); ctx.Err() != nil {
		return nil, ctx.Err()
	} else if err != nil {
		s.log.Warn("a verification wait looks again every few seconds: the event feed cannot be followed", "err", err)
		recheck.Reset(verificationRecheck)
	} else {
		defer sub.Close()
		received = sub.Events
	}
	deadline := time.NewTimer(q.Wait)
	defer deadline.Stop()
	for {
		found, err := s.store.Verifications(ctx, f)
		if err != nil || len(found) > 0 {
			return found, err
		}
		select {
		case <-arrived:
		case _, ok := <-received:
			if !ok { // dropped by the feed: look now and then instead
				received = nil
				recheck.Reset(verificationRecheck)
			}
		case <-recheck.C:
		case <-deadline.C:
			return s.store.Verifications(ctx, f)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
