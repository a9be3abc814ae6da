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
	s.recordSend(c.AccountID, c.Direction, c.StartedAt)
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

func (s *Store) SetCallProvider(_ context.Context, id int64, providerSID string) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if c, ok := s.phoneTables().calls[id]; ok {
		c.ProviderSID = providerSID
	}
	return nil
}

func (s *Store) ClaimMediaToken(_ context.Context, hash string) (core.Call, error) {
	if err := s.lock(); err != nil {
		return core.Call{}, err
	}
	defer s.mu.Unlock()
	for _, c := range s.phoneTables().calls {
		if hash != "" && c.MediaTokenHash == hash {
			c.MediaTokenHash = ""
			return *c, nil
		}
	}
	return core.Call{}, core.NotFound("Stream not found.")
}

// call is a call by id, for the writers below, which hold the lock.
func (s *Store) call(id int64) (*core.Call, error) {
	c, ok := s.phoneTables().calls[id]
	if !ok {
		return nil, core.NotFound("Call not found.")
	}
	return c, nil
}

func (s *Store) StreamConnected(_ context.Context, id int64, at time.Time) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	c, err := s.call(id)
	if err != nil {
		return err
	}
	if c.Status.Ended() {
		return core.NotFound("Stream not found: the call has ended.")
	}
	c.Stream = &core.CallStream{ConnectedAt: at}
	return s.writeEvents(core.CallStartedEvent(*c))
}

func (s *Store) StreamEnded(_ context.Context, id int64, st core.CallStream, reason core.EndReason, recording []byte) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	c, err := s.call(id)
	if err != nil {
		return err
	}
	c.NoteEndReason(reason)
	if recording != nil {
		c.RecordingBytes = int64(len(recording))
		s.phone.recordings[id] = recording
	}
	if e, ok := core.StreamEndedEvent(c, st); ok {
		return s.writeEvents(e)
	}
	return nil
}

func (s *Store) EndStaleStreams(_ context.Context, endedBefore time.Time) (int, error) {
	if err := s.lock(); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.phoneTables().calls {
		if n == 100 || c.Stream == nil || !c.Stream.EndedAt.IsZero() || c.EndedAt.IsZero() || !c.EndedAt.Before(endedBefore) {
			continue
		}
		st := *c.Stream
		st.EndedAt = c.EndedAt
		n++
		if e, ok := core.StreamEndedEvent(c, st); ok {
			if err := s.writeEvents(e); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

func (s *Store) NoteEndReason(_ context.Context, id int64, reason core.EndReason) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	c, err := s.call(id)
	if err == nil {
		c.NoteEndReason(reason)
	}
	return err
}

func (s *Store) ActiveCalls(_ context.Context, accountID string) (int64, error) {
	if err := s.lock(); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	var n int64
	for _, c := range s.phoneTables().calls {
		if c.AccountID == accountID && c.Active() {
			n++
		}
	}
	return n, nil
}

func (s *Store) CallRecording(_ context.Context, accountID string, id int64) ([]byte, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	c, ok := s.phoneTables().calls[id]
	b, kept := s.phone.recordings[id]
	if !ok || !kept || c.AccountID != accountID {
		return nil, core.NotFound("Recording not found.")
	}
	return b, nil
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
