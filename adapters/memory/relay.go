package memory

import (
	"context"
	"sync"

	"github.com/callsign/callsign/ports"
)

// Relay is a ports.MailRelay fake that keeps what it is given. Outcome,
// when set, decides each recipient's fate; by default all are accepted.
type Relay struct {
	mu      sync.Mutex
	sent    []Relayed
	Outcome func(recipient string) ports.RelayOutcome
}

// Relayed is one message handed to the relay.
type Relayed struct {
	From       string
	Recipients []string // the accepted ones
	Raw        []byte
}

func (r *Relay) Relay(_ context.Context, from string, recipients []string, raw []byte) []ports.RelayOutcome {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]ports.RelayOutcome, len(recipients))
	var accepted []string
	for i, rcpt := range recipients {
		out[i] = ports.RelayOutcome{Recipient: rcpt}
		if r.Outcome != nil {
			out[i] = r.Outcome(rcpt)
			out[i].Recipient = rcpt
		}
		if out[i].Err == nil {
			accepted = append(accepted, rcpt)
		}
	}
	if len(accepted) > 0 {
		r.sent = append(r.sent, Relayed{From: from, Recipients: accepted, Raw: append([]byte(nil), raw...)})
	}
	return out
}

// Sent lists what was relayed so far.
func (r *Relay) Sent() []Relayed {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Relayed(nil), r.sent...)
}
