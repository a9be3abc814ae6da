package memory

import (
	"bytes"
	"context"
	"time"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// authTables are the maps of the device-grant and refresh-family stores,
// created on first use.
type authTables struct {
	grants   map[string]*core.DeviceGrant   // by id
	families map[string]*core.RefreshFamily // by id
}

func (s *Store) authTables() *authTables {
	if s.auth.grants == nil {
		s.auth = authTables{grants: map[string]*core.DeviceGrant{}, families: map[string]*core.RefreshFamily{}}
	}
	return &s.auth
}

func (s *Store) CreateRefreshFamily(_ context.Context, f core.RefreshFamily) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if _, ok := s.accounts[f.AccountID]; !ok {
		return core.NotFound("Account not found.")
	}
	s.authTables().families[f.ID] = &f
	return nil
}

func (s *Store) RefreshFamily(_ context.Context, id string) (core.RefreshFamily, error) {
	if err := s.lock(); err != nil {
		return core.RefreshFamily{}, err
	}
	defer s.mu.Unlock()
	f, ok := s.authTables().families[id]
	if !ok {
		return core.RefreshFamily{}, core.NotFound("Sign-in not found.")
	}
	return *f, nil
}

func (s *Store) RotateRefreshFamily(_ context.Context, id string, presented int64, now time.Time) (core.RefreshFamily, error) {
	if err := s.lock(); err != nil {
		return core.RefreshFamily{}, err
	}
	defer s.mu.Unlock()
	f, ok := s.authTables().families[id]
	if !ok {
		return core.RefreshFamily{}, core.NotFound("Sign-in not found.")
	}
	next, err := f.Rotate(presented, now)
	*f = next
	return next, err
}

func (s *Store) DeleteRefreshFamilies(_ context.Context, expiredBefore time.Time) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	deleteWhere(s.authTables().families, func(f *core.RefreshFamily) bool { return f.ExpiresAt.Before(expiredBefore) })
	return nil
}

func (s *Store) CreateDeviceGrant(_ context.Context, g core.DeviceGrant) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	t := s.authTables()
	for _, r := range t.grants {
		if r.UserCode == g.UserCode {
			return conflict("user_code", "This user code is in use.")
		}
		if bytes.Equal(r.DeviceCodeHash, g.DeviceCodeHash) {
			return conflict("device_code", "This device code is in use.")
		}
	}
	t.grants[g.ID] = cloneGrant(g)
	return nil
}

func cloneGrant(g core.DeviceGrant) *core.DeviceGrant {
	g.DeviceCodeHash = append([]byte(nil), g.DeviceCodeHash...)
	if g.LastPolledAt != nil {
		at := *g.LastPolledAt
		g.LastPolledAt = &at
	}
	return &g
}

// findGrant returns a copy of the first grant that matches.
func (s *Store) findGrant(match func(*core.DeviceGrant) bool) (core.DeviceGrant, error) {
	if err := s.lock(); err != nil {
		return core.DeviceGrant{}, err
	}
	defer s.mu.Unlock()
	for _, r := range s.authTables().grants {
		if match(r) {
			return *cloneGrant(*r), nil
		}
	}
	return core.DeviceGrant{}, core.NotFound("Device grant not found.")
}

func (s *Store) DeviceGrantByDeviceCode(_ context.Context, hash []byte) (core.DeviceGrant, error) {
	return s.findGrant(func(g *core.DeviceGrant) bool { return bytes.Equal(g.DeviceCodeHash, hash) })
}

func (s *Store) DeviceGrantByUserCode(_ context.Context, userCode string) (core.DeviceGrant, error) {
	return s.findGrant(func(g *core.DeviceGrant) bool { return g.UserCode == userCode })
}

// updateGrant changes a grant under the lock; change may refuse with an error.
func (s *Store) updateGrant(id string, change func(*core.DeviceGrant) error) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	g, ok := s.authTables().grants[id]
	if !ok {
		return core.NotFound("Device grant not found.")
	}
	return change(g)
}

func (s *Store) RecordDevicePoll(_ context.Context, id string, at time.Time, interval time.Duration) error {
	return s.updateGrant(id, func(g *core.DeviceGrant) error {
		g.LastPolledAt, g.Interval = &at, interval
		return nil
	})
}

func (s *Store) DecideDeviceGrant(_ context.Context, id string, d ports.DeviceDecision) error {
	from, refused := core.DeviceGrantMove(d.Status)
	return s.updateGrant(id, func(g *core.DeviceGrant) error {
		if g.Status != from {
			return refused
		}
		g.Status, g.AccountID, g.KeyType, g.IdentityID = d.Status, d.AccountID, d.KeyType, d.IdentityID
		return nil
	})
}

func (s *Store) RedeemDeviceGrant(_ context.Context, id string, keys []core.APIKey) ([]int64, error) {
	var ids []int64
	from, refused := core.DeviceGrantMove(core.DeviceRedeemed)
	err := s.updateGrant(id, func(g *core.DeviceGrant) error {
		if g.Status != from {
			return refused
		}
		for _, k := range keys {
			if _, ok := s.accounts[k.AccountID]; !ok {
				return core.NotFound("Account not found.")
			}
		}
		g.Status = core.DeviceRedeemed
		for _, k := range keys {
			ids = append(ids, s.insertKey(k))
		}
		return nil
	})
	return ids, err
}

func (s *Store) DeleteDeviceGrants(_ context.Context, expiredBefore time.Time) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	deleteWhere(s.authTables().grants, func(g *core.DeviceGrant) bool { return g.ExpiresAt.Before(expiredBefore) })
	return nil
}
