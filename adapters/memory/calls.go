package memory

import (
	"context"
	"time"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

func (s *Store) callBySID(sid string) *core.Call {
	for _, c := range s.phoneTables().calls {
		if c.ProviderSID == sid {
			return c
		}
	}
	return nil
}

func (s *Store) SaveCall(_ context.Context, c core.Call) (core.Call, bool, error) {
	if err := s.lock(); err != nil {
		return core.Call{}, false, err
	}
	defer s.mu.Unlock()
	if known := s.callBySID(c.ProviderSID); known != nil {
		return *known, false, nil
	}
	if _, ok := s.phoneTables().phones[c.PhoneID]; !ok {
		return core.Call{}, false, core.NotFound("Phone number not found.")
	}
	c.ID = s.nextID()
	s.phone.calls[c.ID] = &c
	return c, true, s.writeEvents(core.CallReceivedEvent(c))
}

func (s *Store) ReportCall(_ context.Context, r core.CallReport) (bool, error) {
	if err := s.lock(); err != nil {
		return false, err
	}
	defer s.mu.Unlock()
	c := s.callBySID(r.ProviderSID)
	if c == nil {
		return false, nil
	}
	if !r.Apply(c) {
		return true, nil
	}
	if e, ok := core.CallEndedEvent(*c); ok {
		return true, s.writeEvents(e)
	}
	return true, nil
}

func (s *Store) Call(_ context.Context, accountID string, id int64) (core.Call, error) {
	if err := s.lock(); err != nil {
		return core.Call{}, err
	}
	defer s.mu.Unlock()
	c, ok := s.phoneTables().calls[id]
	if !ok || c.AccountID != accountID {
		return core.Call{}, core.NotFound("Call not found.")
	}
	return *c, nil
}

func (s *Store) Calls(_ context.Context, f ports.CallFilter) ([]core.Call, int, error) {
	if err := s.lock(); err != nil {
		return nil, 0, err
	}
	defer s.mu.Unlock()
	rows := values(s.phoneTables().calls, func(c *core.Call) bool {
		return f.Scope.Allows(c.AccountID, c.IdentityID) && (f.StartedAfter == nil || c.StartedAt.After(*f.StartedAfter))
	}, func(a, b *core.Call) bool {
		if !a.StartedAt.Equal(b.StartedAt) {
			return a.StartedAt.After(b.StartedAt)
		}
		return a.ID > b.ID
	})
	rows, total := pageOf(rows, f.Page)
	out := make([]core.Call, len(rows))
	for i, r := range rows {
		out[i] = *r
	}
	return out, total, nil
}

func (s *Store) SimulatedHangUps(_ context.Context, now time.Time) ([]core.Call, time.Time, error) {
	if err := s.lock(); err != nil {
		return nil, time.Time{}, err
	}
	defer s.mu.Unlock()
	var next time.Time
	rows := values(s.phoneTables().calls, func(c *core.Call) bool {
		waiting := !c.HangUpAt.IsZero() && !c.Status.Ended()
		if waiting && c.HangUpAt.After(now) && (next.IsZero() || c.HangUpAt.Before(next)) {
			next = c.HangUpAt
		}
		return waiting && !c.HangUpAt.After(now)
	}, func(a, b *core.Call) bool { return a.HangUpAt.Before(b.HangUpAt) })
	if len(rows) > 100 {
		rows = rows[:100]
	}
	out := make([]core.Call, len(rows))
	for i, r := range rows {
		out[i] = *r
	}
	return out, next, nil
}

var _ ports.CallStore = (*Store)(nil)
