package app

import (
	"context"
	"log/slog"
	"time"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// The log lines that say where each message went: one per inbound message,
// per outbox attempt and per text message in or out, at info level, with
// ids, the inbox or identity, the outcome and how long it took; never a
// body, a subject or a secret. Each also goes to the observer, for metrics.

// noObserver is the observer when none is configured.
type noObserver struct{}

func (noObserver) InboundMail(string, time.Duration)     {}
func (noObserver) OutboundAttempt(string, time.Duration) {}
func (noObserver) SMS(string, string)                    {}
func (noObserver) SpamCheck(string)                      {}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// inboundResult names what became of an inbound message, from Deliver's error.
func inboundResult(err error) string {
	switch {
	case err == nil:
		return "accepted"
	case core.KindOf(err) == core.KindInvalid:
		return "unreadable"
	case core.KindOf(err) == core.KindTooLarge:
		return "too_large"
	}
	return "failed"
}

// observeInbound reports a message offered to our inboxes.
func (b *base) observeInbound(in InboundMail, stored []core.EmailMessage, err error, took time.Duration) {
	result := inboundResult(err)
	b.observer.InboundMail(result, took)
	if !b.log.Enabled(context.Background(), slog.LevelInfo) {
		return // not a line, and not its fields, for every message
	}
	attrs := []any{"result", result, "envelope_from", in.EnvelopeFrom, "bytes", len(in.Raw), "duration_ms", ms(took)}
	if err != nil {
		b.log.Info("mail refused", append(attrs, "err", err)...)
		return
	}
	// An operator looks a message up by address: each stored copy is named
	// by its inbox's address and its identity's uuid, not by internal ids.
	addressOf := make(map[int64]string, len(in.Inboxes))
	for _, inbox := range in.Inboxes {
		addressOf[inbox.ID] = inbox.Email
	}
	ids, inboxes, identities := make([]int64, len(stored)), make([]string, len(stored)), make([]string, len(stored))
	for i, m := range stored {
		ids[i], inboxes[i], identities[i] = m.ID, addressOf[m.InboxID], m.IdentityID
	}
	if len(stored) > 0 {
		attrs = append(attrs, "message_id", stored[0].MessageID)
		if a := stored[0].Authentication; a != nil {
			attrs = append(attrs, "verdict", string(a.Verdict), "spf", string(a.SPF), "dkim", string(a.DKIM), "dmarc", string(a.DMARC))
		}
	}
	b.log.Info("mail accepted", append(attrs, "messages", ids, "inboxes", inboxes, "identities", identities)...)
}

// observeAttempt reports one outbox attempt at a message. An attempt that
// will be retried, or that failed itself, is a warning with its reason.
func (b *base) observeAttempt(log *slog.Logger, e ports.OutboxEntry, outcome, lastErr string, took time.Duration) {
	b.observer.OutboundAttempt(outcome, took)
	attrs := []any{"outcome", outcome, "recipients", len(e.Recipients), "duration_ms", ms(took)}
	if len(e.Failures) > 0 {
		attrs = append(attrs, "failures", e.Failures)
	}
	switch outcome {
	case "retry":
		attrs = append(attrs, "next_attempt", e.NextAttempt.UTC().Format(time.RFC3339), "err", lastErr)
		log.Warn("mail delivery attempt", attrs...)
	case "error":
		log.Warn("mail delivery attempt", append(attrs, "err", lastErr)...)
	default:
		log.Info("mail delivery attempt", attrs...)
	}
}

// observeSMS reports a text message in or out.
func (b *base) observeSMS(m core.SMSMessage, outcome string, took time.Duration, err error) {
	b.observer.SMS(string(m.Direction), outcome)
	attrs := []any{"outcome", outcome, "identity", m.IdentityID, "from", m.FromNumber, "to", m.ToNumber,
		"provider_sid", m.ProviderSID, "duration_ms", ms(took)}
	if m.ID != 0 {
		attrs = append([]any{"message", m.ID}, attrs...)
	}
	if err != nil {
		attrs = append(attrs, "err", err)
	}
	b.log.Info("sms "+string(m.Direction), attrs...)
}
