package app

import (
	"context"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// Health answers the public ping.
type Health struct {
	base
	store ports.Pinger
}

// Ping reports whether the database answers.
func (s *Health) Ping(ctx context.Context) error {
	if err := s.store.Ping(ctx); err != nil {
		s.log.Error("health check: database unreachable", "err", err)
		return core.Unavailable("The database is unreachable.")
	}
	return nil
}
