package app

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// Health answers the public ping and the readiness check.
type Health struct {
	base
	store interface {
		ports.Pinger
		ports.SchemaStatus
	}
	workers atomic.Pointer[WorkerStatus]
}

// WorkerStatus tells which of a running service's parts (listeners and
// background workers) are not running: while it starts, after one failed,
// and once shutdown has begun.
type WorkerStatus interface {
	NotRunning() []string
}

// WatchWorkers makes readiness depend on w; without it, only the database
// is checked.
func (s *Health) WatchWorkers(w WorkerStatus) { s.workers.Store(&w) }

// Ping reports whether the database answers.
func (s *Health) Ping(ctx context.Context) error {
	if err := s.store.Ping(ctx); err != nil {
		s.log.Error("health check: database unreachable", "err", err)
		return core.Unavailable("The database is unreachable.")
	}
	return nil
}

// Ready reports whether this instance should be sent traffic: the database
// answers, its schema is current, and every part of the service runs. The
// error names everything missing, so an operator reads why at once.
func (s *Health) Ready(ctx context.Context) error {
	var missing []string
	if err := s.Ping(ctx); err != nil {
		missing = append(missing, "the database is unreachable")
	} else if n, err := s.store.PendingMigrations(ctx); err != nil {
		s.log.Error("readiness: reading the schema version failed", "err", err)
		missing = append(missing, "the schema version cannot be read")
	} else if n > 0 {
		missing = append(missing, fmt.Sprintf("%d migration(s) are not applied (run callsign migrate)", n))
	}
	if w := s.workers.Load(); w != nil {
		if parts := (*w).NotRunning(); len(parts) > 0 {
			missing = append(missing, "not running: "+strings.Join(parts, ", "))
		}
	}
	if len(missing) > 0 {
		return core.Unavailable("Not ready: %s.", strings.Join(missing, "; "))
	}
	return nil
}
