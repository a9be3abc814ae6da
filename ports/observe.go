package ports

import "time"

// Observer hears what happens to messages, for metrics; the app writes its
// own log lines. Calls are made on the paths they measure, so they must be
// quick, and they cannot fail.
type Observer interface {
	// InboundMail: a message offered to our inboxes (over SMTP or from an
	// IMAP source), by result: accepted, unreadable, too_large or failed
	// (not stored; the sender retries); took is parsing and storing it.
	InboundMail(result string, took time.Duration)
	// OutboundAttempt: one outbox attempt at one message, by outcome: sent,
	// failed (for good), retry, or error (the attempt itself failed).
	OutboundAttempt(outcome string, took time.Duration)
	// SMS: a text message in (received, duplicate, dropped) or out (the
	// provider's status, or refused, unavailable).
	SMS(direction, outcome string)
	// SpamCheck: one message judged by the spam filter, by outcome: ham,
	// spam, refused, deferred, or unavailable (no verdict in time: the
	// message was accepted unjudged).
	SpamCheck(outcome string)
}
