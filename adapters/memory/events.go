package memory

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// eventTables is the event log: every account's events in one list, in
// the order they were written (which is each account's sequence order).
type eventTables struct {
	log    []core.Event
	seq    map[string]int64 // per account: the last sequence number given
	pruned map[string]int64 // per account: the highest sequence number pruned
	// written is EventsWritten's channel, made on first use.
	written chan struct{}
}

func (s *Store) eventTables() *eventTables {
	if s.events.seq == nil {
		s.events.seq, s.events.pruned = map[string]int64{}, map[string]int64{}
		s.events.written = make(chan struct{}, 1)
	}
	return &s.events
}

// writeEvents appends events under the store's lock, as the SQL store
// writes them in the change's transaction, and tells the reader.
func (s *Store) writeEvents(events ...core.NewEvent) error {
	if len(events) == 0 {
		return nil
	}
	t := s.eventTables()
	encode := s.EventData
	if encode == nil {
		encode = func(e core.NewEvent) ([]byte, error) { return json.Marshal(e.Subject) }
	}
	for _, e := range events {
		data, err := encode(e)
		if err != nil {
			return err
		}
		t.seq[e.AccountID]++
		stored := core.Event{Seq: t.seq[e.AccountID], AccountID: e.AccountID, IdentityID: e.IdentityID, Type: e.Type,
			CreatedAt: time.Now().UTC().Truncate(time.Microsecond), Data: data}
		t.log = append(t.log, stored)
		s.writeDeliveries(stored)
	}
	select {
	case t.written <- struct{}{}:
	default:
	}
	return nil
}

func (s *Store) Events(_ context.Context, f core.EventFilter) ([]core.Event, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var out []core.Event
	log := s.eventTables().log
	for i := range log {
		e := log[i]
		if f.Newest {
			e = log[len(log)-1-i]
		}
		if len(out) == f.Limit {
			break
		}
		if f.Keeps(e) {
			out = append(out, e)
		}
	}
	return out, nil
}

func (s *Store) LatestEvent(_ context.Context, accountID string) (int64, error) {
	return s.eventMark(accountID, func(t *eventTables) map[string]int64 { return t.seq })
}

func (s *Store) EventsPrunedThrough(_ context.Context, accountID string) (int64, error) {
	return s.eventMark(accountID, func(t *eventTables) map[string]int64 { return t.pruned })
}

// eventMark reads one of an account's marks in its log (newest, pruned).
func (s *Store) eventMark(accountID string, marks func(*eventTables) map[string]int64) (int64, error) {
	if err := s.lock(); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	if _, ok := s.accounts[accountID]; !ok {
		return 0, core.NotFound("Account not found.")
	}
	return marks(s.eventTables())[accountID], nil
}

// PruneEvents deletes whole prefixes of accounts' logs, as the SQL store does.
func (s *Store) PruneEvents(_ context.Context, before time.Time, limit int) (int, error) {
	if err := s.lock(); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	t := s.eventTables()
	ends := map[string]int64{}
	for i, e := range t.log {
		if i == limit {
			break
		}
		if e.CreatedAt.Before(before) {
			ends[e.AccountID] = max(ends[e.AccountID], e.Seq)
		}
	}
	n := len(t.log)
	t.log = slices.DeleteFunc(t.log, func(e core.Event) bool { return e.Seq <= ends[e.AccountID] })
	for a, seq := range ends {
		t.pruned[a] = max(t.pruned[a], seq)
	}
	return n - len(t.log), nil
}

func (s *Store) EventsWritten() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.eventTables().written
}

var _ ports.EventStore = (*Store)(nil)
