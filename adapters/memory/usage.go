package memory

import (
	"context"
	"time"

	"github.com/callsign/callsign/core"
)

// Usage implements ports.UsageStore by counting the tables, as the SQL
// store's queries and triggers do; storage sums core's figure of each row.
func (s *Store) Usage(_ context.Context, accountID, identityID string, since time.Time, quotas []core.Quota) (core.Usage, error) {
	if err := s.lock(); err != nil {
		return core.Usage{}, err
	}
	defer s.mu.Unlock()
	if _, ok := s.accounts[accountID]; !ok {
		return core.Usage{}, core.NotFound("Account not found.")
	}
	u := core.Usage{Used: map[core.Quota]int64{}}
	mail, phone := s.mailTables(), s.phoneTables()
	for _, q := range quotas {
		var n int64
		switch q {
		case core.QuotaStorage:
			for _, m := range mail.messages {
				if m.AccountID == accountID {
					n += core.MessageStoredBytes(m.raw)
				}
			}
			for _, a := range mail.attachments {
				if a.AccountID == accountID {
					n += core.AttachmentStoredBytes(a.Content, a.InSource)
				}
			}
			for _, d := range s.draftRows() {
				if d.AccountID == accountID {
					n += core.DraftStoredBytes(*d)
				}
			}
			for id, c := range s.phoneTables().calls {
				if c.AccountID == accountID {
					n += int64(len(s.phone.recordings[id]))
				}
			}
		case core.QuotaIdentities:
			for _, r := range s.identities {
				if r.AccountID == accountID {
					n++
				}
			}
		case core.QuotaInboxes:
			for _, r := range s.inboxes {
				if r.AccountID == accountID {
					n++
				}
			}
		case core.QuotaPhones:
			for _, p := range phone.phones {
				if p.AccountID == accountID {
					n++
				}
			}
		case core.QuotaVaultItems:
			n = s.vaultItems(accountID, identityID)
		case core.QuotaSendsPerHour:
			for _, at := range s.sends[accountID] {
				if at.Before(since) {
					continue
				}
				n++
				if u.OldestSend.IsZero() || at.Before(u.OldestSend) {
					u.OldestSend = at
				}
			}
		}
		u.Used[q] = n
	}
	return u, nil
}

// vaultItems counts one identity's passwords and secrets, or with no
// identity the most any identity of the account holds.
func (s *Store) vaultItems(accountID, identityID string) int64 {
	per := map[string]int64{}
	for _, p := range s.passwords {
		if p.Entry.AccountID == accountID {
			per[p.Entry.IdentityID]++
		}
	}
	for _, sec := range s.secrets {
		if sec.Secret.AccountID == accountID {
			per[sec.Secret.IdentityID]++
		}
	}
	if identityID != "" {
		return per[identityID]
	}
	var most int64
	for _, n := range per {
		most = max(most, n)
	}
	return most
}

// recordSend logs a message or text sent, as the SQL store's triggers do.
func (s *Store) recordSend(accountID string, d core.Direction, at time.Time) {
	if d != core.Outgoing {
		return
	}
	if s.sends == nil {
		s.sends = map[string][]time.Time{}
	}
	s.sends[accountID] = append(s.sends[accountID], at)
}
