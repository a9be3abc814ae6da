package sqlstore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/callsign/callsign/adapters/sqlstore/sqlstoretest"
	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// BenchmarkUsage times each quota's count for an account holding 100,000
// messages (1 KiB sources), 200 of them sent within the hour, and an
// identity with 1,000 vault entries: the reads the quota checks make.
func BenchmarkUsage(b *testing.B) {
	ctx := context.Background()
	for _, d := range sqlstoretest.Dialects() {
		b.Run(string(d), func(b *testing.B) {
			db := sqlstoretest.Open(b, d)
			now := time.Now().UTC()
			acct := core.Account{ID: uuid.NewString(), Email: "bench@example.com", SubscriptionActive: true, CreatedAt: now}
			if err := db.CreateAccount(ctx, acct); err != nil {
				b.Fatal(err)
			}
			ident := core.Identity{ID: uuid.NewString(), AccountID: acct.ID, Name: "bench", Inbox: "bench@agents.test", CreatedAt: now, UpdatedAt: now}
			inbox := core.Inbox{UUID: uuid.NewString(), AccountID: acct.ID, IdentityID: ident.ID, Email: ident.Inbox, CreatedAt: now}
			inboxID, err := db.CreateIdentity(ctx, ident, inbox, nil)
			if err != nil {
				b.Fatal(err)
			}
			raw := []byte(strings.Repeat("x", 1024))
			const total, sent = 100_000, 200
			for start := 0; start < total; start += 1000 {
				batch := make([]ports.NewMail, 0, 1000)
				for i := start; i < start+1000; i++ {
					m := core.EmailMessage{AccountID: acct.ID, IdentityID: ident.ID, InboxID: inboxID, Direction: core.Incoming,
						Header: core.Header{MessageID: fmt.Sprintf("%d@bench", i), Subject: "bench"}, CreatedAt: now.Add(-2 * time.Hour)}
					if i >= total-sent {
						m.Direction, m.CreatedAt = core.Outgoing, now
					}
					batch = append(batch, ports.NewMail{Message: m, NewThreadID: uuid.NewString()[:12], Raw: raw})
				}
				if _, err := db.SaveMail(ctx, batch); err != nil {
					b.Fatal(err)
				}
			}
			for i := range 1000 {
				sec := core.Secret{ID: uuid.NewString(), AccountID: acct.ID, IdentityID: ident.ID, Key: fmt.Sprint("K", i), CreatedAt: now, UpdatedAt: now}
				if err := db.CreateSecret(ctx, ports.StoredSecret{Secret: sec, Value: []byte("v")}); err != nil {
					b.Fatal(err)
				}
			}
			since := now.Add(-time.Hour)
			for _, c := range []struct {
				quota    core.Quota
				identity string
			}{{core.QuotaStorage, ""}, {core.QuotaSendsPerHour, ""}, {core.QuotaIdentities, ""}, {core.QuotaInboxes, ""},
				{core.QuotaVaultItems, ident.ID}, {core.QuotaVaultItems, ""}} {
				name := string(c.quota)
				if c.quota == core.QuotaVaultItems && c.identity == "" {
					name += "/fullest"
				}
				b.Run(name, func(b *testing.B) {
					for range b.N {
						u, err := db.Usage(ctx, acct.ID, c.identity, since, []core.Quota{c.quota})
						if err != nil {
							b.Fatal(err)
						}
						if c.quota == core.QuotaSendsPerHour && u.Used[c.quota] != sent || c.quota == core.QuotaStorage && u.Used[c.quota] != total*1024 {
							b.Fatalf("%s: %d", c.quota, u.Used[c.quota])
						}
					}
				})
			}
		})
	}
}
