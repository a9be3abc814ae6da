package app

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// Outbox delivers the messages queued to leave: it leases due entries,
// hands each recipient to our own inboxes (Receiving) or to the relay, and
// retries or gives up as the retry policy says (spec §4).
type Outbox struct {
	base
	messages  ports.MailStore // the sources to send
	outbox    ports.OutboxStore
	receiving *Receiving      // routes recipients and takes those of our inboxes
	bounces   *bounces        // recipients refused for good
	relay     ports.MailRelay // nil: no external delivery
	retry     RetryPolicy
	lease     time.Duration // how long a claimed outbox entry is ours
	// wake nudges the outbox worker after a message is queued.
	wake chan struct{}
}

// DefaultOutboxLease is how long a claimed entry is its worker's
// (CALLSIGN_OUTBOX_LEASE); a worker that dies with it leaves it to be
// claimed again after this.
const DefaultOutboxLease = 5 * time.Minute

// RetryPolicy spaces out delivery attempts: First, then doubling up to Max,
// until GiveUpAfter has passed since the message was queued.
type RetryPolicy struct {
	First, Max, GiveUpAfter time.Duration
}

// DefaultRetry retries for up to two days, as mail servers customarily do.
var DefaultRetry = RetryPolicy{First: 30 * time.Second, Max: time.Hour, GiveUpAfter: 48 * time.Hour}

// after is the pause before the attempt following `attempts` attempts.
func (p RetryPolicy) after(attempts int) time.Duration {
	d := p.First
	for i := 1; i < attempts && d < p.Max; i++ {
		d *= 2
	}
	return min(d, p.Max)
}

// AttemptBound is how long the relay may take over one attempt when
// entries are leased for lease: at most 2 minutes, and never more than
// half the lease, so that no other worker can claim an entry while it is
// being sent.
func AttemptBound(lease time.Duration) time.Duration {
	return min(2*time.Minute, lease/2)
}

const (
	// outboxBatch is how many entries a worker claims at once: one, so that
	// nothing it holds waits behind a slow attempt, and nothing claimed is
	// left unattempted when it stops. An attempt is bounded well within the
	// lease (AttemptBound).
	outboxBatch = 1
	// outboxPoll is how often the worker looks for due retries when nothing
	// nudges it.
	outboxPoll = time.Second
)

// enqueue stores nm, an outgoing message with its outbox entry, in one
// transaction, and wakes the worker; the entry gives up once the retry
// policy's GiveUpAfter has passed since its first attempt was due.
func (s *Outbox) enqueue(ctx context.Context, nm ports.NewMail) (core.EmailMessage, error) {
	nm.Outbox.GiveUpAt = nm.Outbox.NextAttempt.Add(s.retry.GiveUpAfter)
	stored, err := s.receiving.save(ctx, []ports.NewMail{nm})
	if err != nil {
		return core.EmailMessage{}, err
	}
	s.nudgeOutbox()
	return stored[0], nil
}

// nudgeOutbox wakes the worker without blocking.
func (s *Outbox) nudgeOutbox() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// RunOutbox delivers queued messages until ctx ends. Several workers, in
// this instance or others sharing the database, may run at once: each entry
// is leased to one of them at a time.
//
// When ctx ends no entry is claimed any more, but the attempt under way
// goes on, for up to grace, on a context of its own, and its outcome is
// recorded: cancelling it mid-transaction could leave a message the relay
// took recorded as unsent, and sent again after the lease. What remains
// at-least-once: a process killed (or an attempt cut at grace) after the
// relay accepted and before the outcome was stored sends the message
// again once its lease runs out.
func (s *Outbox) RunOutbox(ctx context.Context, grace time.Duration) {
	tick := time.NewTicker(outboxPoll)
	defer tick.Stop()
	work, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	stopWaiting := context.AfterFunc(ctx, func() { time.AfterFunc(grace, cancelWork) })
	defer stopWaiting()
	for {
		for ctx.Err() == nil && s.deliverDue(ctx, work) == outboxBatch {
			// A full batch: more may be waiting.
		}
		due := s.nextDue(ctx)
		select {
		case <-ctx.Done():
			due.Stop()
			return
		case <-s.wake:
		case <-tick.C:
		case <-due.C:
		}
		due.Stop()
	}
}

// minDueWait keeps a worker whose due entry it cannot claim (another
// worker's lease just ended, the database refuses) from spinning.
const minDueWait = 50 * time.Millisecond

// nextDue is a timer for when the earliest entry becomes due, if that comes
// before the next poll, so that a message scheduled for a time (a draft's
// send_at) or a retry leaves then, not up to a poll later. Otherwise it is
// a timer that never fires.
func (s *Outbox) nextDue(ctx context.Context) *time.Timer {
	next, ok, err := s.outbox.NextOutboxAttempt(ctx)
	wait := outboxPoll
	if err == nil && ok {
		wait = max(next.Sub(s.now()), minDueWait)
	}
	if wait >= outboxPoll {
		t := time.NewTimer(time.Hour)
		t.Stop()
		return t
	}
	return time.NewTimer(wait)
}

// deliverDue claims what is due (while ctx lasts) and makes one attempt at
// each, on work, which outlives ctx by the shutdown grace.
func (s *Outbox) deliverDue(ctx, work context.Context) int {
	now := s.now()
	entries, err := s.outbox.ClaimOutbox(ctx, now, now.Add(s.lease), outboxBatch)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Error("outbox: claiming messages failed", "err", err)
		}
		return 0
	}
	for _, e := range entries {
		s.attempt(work, e)
	}
	return len(entries)
}

// attempt tries every remaining recipient of e once: our own inboxes
// through local delivery, the rest through the relay. Recipients that fail
// for good are recorded; those that may succeed later are retried.
func (s *Outbox) attempt(ctx context.Context, e ports.OutboxEntry) {
	start := time.Now()
	log := s.log.With("message", e.MessageID, "attempt", e.Attempts)
	raw, err := s.messages.RawMessage(ctx, e.AccountID, e.MessageID)
	if err != nil {
		log.Error("outbox: reading the message failed", "err", err)
		s.observeAttempt(log, e, "error", err.Error(), time.Since(start))
		return // the lease runs out and another attempt follows
	}
	msg, err := s.messages.Message(ctx, e.AccountID, e.MessageID)
	if err != nil {
		log.Error("outbox: reading the message failed", "err", err)
		s.observeAttempt(log, e, "error", err.Error(), time.Since(start))
		return
	}
	fates := newFates(msg, e.Recipients)
	var retry []string
	var lastErr string
	refused := false // the relay refused our credentials
	fail := func(rcpt, reason, reply string) {
		e.Failures = append(e.Failures, rcpt+": "+reason)
		fates.set(rcpt, core.RecipientBounced, reason)
		code, enhanced := core.SplitReply(reply)
		s.bounces.bounced(ctx, msg, rcpt, reason, code, enhanced)
	}
	deferred := func(rcpt, reason string) {
		retry, lastErr = append(retry, rcpt), reason
		fates.set(rcpt, core.RecipientDeferred, reason)
	}
	var local []core.Inbox
	var localRcpts, external []string
	for _, rcpt := range e.Recipients {
		dest, in, err := s.receiving.route(ctx, rcpt)
		switch {
		case err != nil:
			deferred(rcpt, err.Error())
		case dest == toInbox:
			if err := s.receiving.roomFor(ctx, in); err != nil {
				// What a remote server answers for a full mailbox: later.
				deferred(rcpt, localDeferral(err))
				continue
			}
			local, localRcpts = append(local, in), append(localRcpts, rcpt)
		case dest == toNowhere:
			fail(rcpt, "550 5.1.1 no such mailbox", "550 5.1.1 no such mailbox")
		default:
			external = append(external, rcpt)
		}
	}
	if len(local) > 0 {
		err := s.receiving.deliverLocally(ctx, e.EnvelopeFrom, local, raw)
		for _, rcpt := range localRcpts {
			if err != nil {
				deferred(rcpt, "local delivery: "+err.Error())
			} else {
				fates.set(rcpt, core.RecipientSent, "")
			}
		}
	}
	if len(external) > 0 && s.relay == nil {
		for _, rcpt := range external {
			fail(rcpt, "no outbound relay is configured (CALLSIGN_SMTP_RELAY is not set), so mail cannot leave this server", "")
		}
	} else if len(external) > 0 {
		for _, o := range s.relay.Relay(ctx, e.EnvelopeFrom, external, raw) {
			switch {
			case o.Err == nil:
				fates.set(o.Recipient, core.RecipientSent, "")
				fates.provided(o.Recipient, o.ProviderID)
			case o.Permanent:
				fail(o.Recipient, o.Err.Error(), o.Reply)
			default:
				deferred(o.Recipient, o.Err.Error())
				refused = refused || core.KindOf(o.Err) == core.KindUnauthorized
			}
		}
		if refused {
			log.Error("outbox: the relay or mail provider refused our credentials or sender; mail stays queued until CALLSIGN_SMTP_RELAY or the provider's settings (CALLSIGN_MAIL_PROVIDER) are fixed", "err", lastErr)
		}
	}
	e, outcome := s.settle(ctx, log, e, retry, lastErr, fates)
	if outcome != "sent" && outcome != "failed" { // a finished message's recipients were recorded with it
		if err := s.outbox.SetRecipients(ctx, e.MessageID, fates.list); err != nil && !isNotFound(err) {
			log.Error("outbox: recording the recipients failed", "err", err)
		}
	}
	s.observeAttempt(log, e, outcome, lastErr, time.Since(start))
}

// localDeferral is the reason a local recipient waits: a full mailbox is
// said as SMTP says it.
func localDeferral(err error) string {
	if core.QuotaOf(err) == core.QuotaStorage {
		return "452 4.2.2 mailbox full: the recipient's account is at its storage quota"
	}
	return "local delivery: " + err.Error()
}

// settle records the outcome of an attempt: finished (sent, or failed with
// every reason), or another attempt later, unless time is up. It returns
// the entry as recorded and the outcome: sent, failed, retry, or error
// when recording failed.
func (s *Outbox) settle(ctx context.Context, log *slog.Logger, e ports.OutboxEntry, retry []string, lastErr string, fates *fates) (ports.OutboxEntry, string) {
	now := s.now()
	next := now.Add(s.retry.after(e.Attempts))
	var err error
	outcome := "failed"
	switch {
	case len(retry) == 0 && len(e.Failures) == 0:
		outcome = "sent"
		err = s.outbox.FinishOutbox(ctx, e.MessageID, core.DeliverySent, "", fates.list)
	case len(retry) == 0:
		err = s.outbox.FinishOutbox(ctx, e.MessageID, core.DeliveryFailed, strings.Join(e.Failures, "; "), fates.list)
	case next.After(e.GiveUpAt):
		for _, rcpt := range retry {
			reason := fmt.Sprintf("gave up after %d attempts: %s", e.Attempts, lastErr)
			e.Failures = append(e.Failures, rcpt+": "+reason)
			fates.set(rcpt, core.RecipientBounced, reason)
			s.bounces.bounced(ctx, fates.msg, rcpt, reason, 0, "")
		}
		err = s.outbox.FinishOutbox(ctx, e.MessageID, core.DeliveryFailed, strings.Join(e.Failures, "; "), fates.list)
	default:
		outcome = "retry"
		e.Recipients, e.NextAttempt = retry, next
		err = s.outbox.RetryOutbox(ctx, e, lastErr)
	}
	switch {
	case isNotFound(err):
		log.Info("outbox: the message was deleted during its attempt")
	case err != nil:
		log.Error("outbox: recording the attempt failed", "err", err)
		outcome = "error"
	}
	return e, outcome
}

// fates follows what becomes of each recipient of a message during one
// delivery attempt.
type fates struct {
	msg  core.EmailMessage
	list []core.Recipient
}

// newFates starts from the message's recipients; a message queued before
// recipients were recorded starts from the outbox entry's.
func newFates(m core.EmailMessage, pending []string) *fates {
	f := &fates{msg: m, list: append([]core.Recipient(nil), m.Recipients...)}
	if len(f.list) == 0 {
		f.list = core.NewRecipients(pending)
	}
	return f
}

func (f *fates) set(addr string, status core.RecipientStatus, reason string) {
	for i := range f.list {
		if strings.EqualFold(f.list[i].Email, addr) {
			f.list[i].Status, f.list[i].Error = status, reason
			return
		}
	}
	f.list = append(f.list, core.Recipient{Email: addr, Status: status, Error: reason})
}

// provided records the mail provider's id of the message it accepted for
// addr, which its delivery events will name.
func (f *fates) provided(addr, providerID string) {
	for i := range f.list {
		if strings.EqualFold(f.list[i].Email, addr) {
			f.list[i].ProviderID = providerID
			return
		}
	}
}
