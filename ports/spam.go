package ports

import (
	"context"
	"net"

	"github.com/callsign/callsign/core"
)

// SpamQuery is what a spam filter is told of a received message besides
// its bytes: the SMTP client and envelope, when the message crossed an
// SMTP connection of ours or a provider's that reported them.
type SpamQuery struct {
	IP         net.IP // nil when unknown
	HELO       string
	MailFrom   string
	Recipients []string
}

// SpamChecker is a spam filter (rspamd).
type SpamChecker interface {
	// Check judges raw, the message as stored (our Authentication-Results
	// field on top). An error means no verdict: the filter is down, slow
	// or answered nonsense; the message is then accepted unjudged.
	Check(ctx context.Context, q SpamQuery, raw []byte) (core.SpamVerdict, error)
	// Learn teaches the filter that raw is spam (or not).
	Learn(ctx context.Context, spam bool, raw []byte) error
}
