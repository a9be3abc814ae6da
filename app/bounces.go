package app

import (
	"context"
	"strings"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// bounces handles the recipients of our mail refused for good: at once by
// the relay, or later by a report sent to a bounce address. Receiving
// (reports arrive as mail) and the Outbox (refusals) both use it.
type bounces struct {
	base
	outbox  ports.OutboxStore // finds a bounce token's message, applies reports
	inboxes *Inboxes          // the inbox that sent the message
	domains *Domains          // which domains we receive for
	// suppressions refuses sending to addresses that bounced, and records them.
	suppressions *Suppressions
	reports      ports.DSNReader // reads bounces
}

// bounced is where a recipient refused for good is handled, at once by a
// relay or later by a report: the address is suppressed when the reply
// says the address itself is bad (core.SuppressesAddress). The store
// wrote email.bounced with the report (ApplyReport's transaction).
func (s *bounces) bounced(ctx context.Context, m core.EmailMessage, rcpt, reason string, code int, enhanced string) {
	s.log.Info("email bounced", "message", m.ID, "recipient", rcpt, "reason", reason)
	if core.SuppressesAddress(enhanced, code) {
		s.suppress(ctx, m, rcpt, reason)
	}
}

// suppress records that the account no longer sends to rcpt.
func (s *bounces) suppress(ctx context.Context, m core.EmailMessage, rcpt, reason string) {
	err := s.suppressions.store.Suppress(ctx, core.Suppression{AccountID: m.AccountID, IdentityID: m.IdentityID,
		Email: strings.ToLower(rcpt), Reason: reason, CreatedAt: s.now()})
	if err != nil {
		s.log.Error("suppressing an address failed", "message", m.ID, "err", err)
	}
}

// apply is the one way a report reaches a message we sent, whoever
// reported (a DSN sent to a bounce address, a mail provider's
// notification): the store applies it and writes its events in one
// transaction; then the addresses it condemns are suppressed.
func (s *bounces) apply(ctx context.Context, m core.EmailMessage, report []core.DSNRecipient) error {
	now, applied, err := s.outbox.ApplyReport(ctx, m.ID, report)
	if err != nil {
		return err
	}
	for _, line := range applied {
		s.log.Info("email "+string(line.Outcome()), "message", m.ID, "recipient", line.Address(), "reason", line.Error())
		if line.Suppresses() {
			s.suppress(ctx, now, line.Address(), line.SuppressionReason())
		}
	}
	return nil
}

// Report applies what a mail provider said about one recipient of a
// message we sent, found by its Message-ID. A report about a message we
// do not have (deleted since, or never ours) is NotFound: the webhook
// answers it as done, so the provider does not retry.
func (s *Outbox) Report(ctx context.Context, r core.DeliveryReport) error {
	m, err := s.outbox.SentMessageByMessageID(ctx, strings.Trim(strings.TrimSpace(r.MessageID), "<>"))
	if err != nil {
		return err
	}
	return s.bounces.apply(ctx, m, []core.DSNRecipient{r.DSN()})
}

// bounceRecipient accepts RCPT TO a bounce address whose token names a
// message we sent, as mail for the inbox that sent it; any other token is
// no such mailbox, and a domain we do not serve is no relay.
func (s *bounces) bounceRecipient(ctx context.Context, addr, token string) (core.Inbox, error) {
	_, domain, _ := core.SplitAddress(strings.TrimSpace(addr))
	served, _, err := s.domains.Receiving(ctx, core.NormalizeDomain(domain))
	switch {
	case err != nil:
		return core.Inbox{}, err
	case !served:
		return core.Inbox{}, errRelayDenied
	}
	m, err := s.outbox.MessageByBounceToken(ctx, token)
	if isNotFound(err) {
		return core.Inbox{}, errNoSuchMailbox
	}
	if err != nil {
		return core.Inbox{}, err
	}
	return s.inboxes.inboxByID(ctx, m.InboxID)
}

// takeReports applies a bounce report sent to a bounce address to the
// message it names, and returns the inboxes still to receive the
// message: a report is not stored as mail, while anything else sent to a
// bounce address (an auto-reply, a bounce in prose) goes to the inbox
// that sent the message, as ordinary mail.
func (s *bounces) takeReports(ctx context.Context, in InboundMail) ([]core.Inbox, error) {
	var sent []core.EmailMessage
	for _, rcpt := range in.Envelope {
		token, ok := core.ParseBounceAddress(rcpt)
		if !ok {
			continue
		}
		m, err := s.outbox.MessageByBounceToken(ctx, token)
		if isNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		sent = append(sent, m)
	}
	if len(sent) == 0 || s.reports == nil {
		return in.Inboxes, nil
	}
	dsn, ok := s.reports.ReadDSN(in.Raw)
	if !ok {
		return in.Inboxes, nil
	}
	reported := map[int64]bool{}
	for _, m := range sent {
		if err := s.apply(ctx, m, dsn.Recipients); err != nil {
			return nil, err
		}
		reported[m.InboxID] = true
	}
	var rest []core.Inbox
	for _, inbox := range in.Inboxes {
		if !reported[inbox.ID] {
			rest = append(rest, inbox)
		}
	}
	return rest, nil
}
