package app

import (
	"context"

	"github.com/callsign/callsign/core"
)

// Health answers the public ping.
type Health struct{ *base }

// Ping reports whether the database answers.
func (s *Health) Ping(ctx context.Context) error {
	if err := s.deps.Store.Ping(ctx); err != nil {
		s.deps.Log.Error("health check: database unreachable", "err", err)
		return core.Unavailable("The database is unreachable.")
	}
	return nil
}
