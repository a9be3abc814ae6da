package memory

import (
	"context"
	"sort"
	"strings"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

func (s *Store) Verifications(_ context.Context, f ports.VerificationFilter) ([]core.ReceivedVerification, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var out []core.ReceivedVerification
	match := func(v *core.Verification, account, identity string, dir core.Direction, from string, source core.VerificationSource) bool {
		return v != nil && account == f.AccountID && identity == f.IdentityID && dir == core.Incoming &&
			(f.Source == "" || f.Source == source) && strings.Contains(strings.ToLower(from), strings.ToLower(f.From))
	}
	for _, r := range s.mailTables().messages {
		m := r.EmailMessage
		if match(m.Verification, m.AccountID, m.IdentityID, m.Direction, m.FromEmail, core.VerificationByEmail) && m.CreatedAt.After(f.After) {
			out = append(out, core.ReceivedVerification{Verification: *m.Verification, Source: core.VerificationByEmail,
				MessageID: m.ID, IdentityID: m.IdentityID, From: m.FromEmail, CreatedAt: m.CreatedAt})
		}
	}
	for _, m := range s.phoneTables().sms {
		if match(m.Verification, m.AccountID, m.IdentityID, m.Direction, m.FromNumber, core.VerificationBySMS) && m.CreatedAt.After(f.After) {
			out = append(out, core.ReceivedVerification{Verification: *m.Verification, Source: core.VerificationBySMS,
				MessageID: m.ID, IdentityID: m.IdentityID, From: m.FromNumber, CreatedAt: m.CreatedAt})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		switch {
		case !a.CreatedAt.Equal(b.CreatedAt):
			return a.CreatedAt.After(b.CreatedAt)
		case a.Source != b.Source:
			return a.Source < b.Source
		}
		return a.MessageID > b.MessageID
	})
	if len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out, nil
}
