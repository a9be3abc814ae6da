package sqlstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/callsign/callsign/adapters/sqlstore"
	"github.com/callsign/callsign/adapters/sqlstore/sqlstoretest"
	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// TestMailBatchWithABadCall: calls that share a group commit with one that
// fails (a draft already gone) are stored alone, each with its own search
// row and event, naming its own id.
func TestMailBatchWithABadCall(t *testing.T) {
	ctx := context.Background()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			var mu sync.Mutex
			biggest := 0 // calls in the largest commit, logged: how much the batches were shared
			db := sqlstoretest.OpenWith(t, sqlstoretest.URL(t, d), sqlstore.Options{CommitBatch: func(n int) {
				mu.Lock()
				biggest = max(biggest, n)
				mu.Unlock()
			}})
			now := time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)
			acct, ident, inboxID := newMailbox(t, db, "batch@example.com", "b", now)
			const calls = 160
			words := make([]string, calls)
			ids := make([]int64, calls)
			errs := make([]error, calls)
			var wg sync.WaitGroup
			gate := make(chan struct{}) // all at once, so that they share commits
			for round := 0; round < calls; round++ {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					<-gate
					words[i] = fmt.Sprintf("zebra%cq%c", 'a'+i%26, 'a'+i/26)
					m := core.EmailMessage{AccountID: acct.ID, IdentityID: ident.ID, InboxID: inboxID, Direction: core.Incoming,
						Header: core.Header{MessageID: fmt.Sprintf("m%d@x", i), Subject: "s " + words[i]}, Text: words[i], CreatedAt: now}
					nm := ports.NewMail{Message: m, NewThreadID: uuid.NewString()[:12], Raw: []byte("Subject: s\r\n\r\n" + words[i])}
					if i%7 == 3 { // a draft sent already: the call fails
						nm.FromDraft = &core.Draft{ID: uuid.NewString(), AccountID: acct.ID}
					}
					out, err := db.SaveMail(ctx, []ports.NewMail{nm})
					if errs[i] = err; err == nil {
						ids[i] = out[0].ID
					}
				}(round)
			}
			close(gate)
			wg.Wait()
			t.Logf("the largest commit stored %d calls", biggest)
			scope := core.Scope{AccountID: acct.ID}
			stored := 0
			for i := range calls {
				if (i%7 == 3) != (errs[i] != nil) {
					t.Fatalf("call %d: %v", i, errs[i])
				}
				q, _ := core.ParseSearch(words[i])
				found, _, err := db.Messages(ctx, ports.MessageFilter{Scope: scope, Search: &q, Limit: 10})
				if err != nil {
					t.Fatal(err)
				}
				switch {
				case errs[i] != nil && len(found) != 0:
					t.Errorf("call %d failed, yet search finds %d messages", i, len(found))
				case errs[i] == nil && (len(found) != 1 || found[0].ID != ids[i]):
					t.Errorf("call %d stored %d; search finds %+v", i, ids[i], found)
				}
				if errs[i] == nil {
					stored++
				}
			}
			events, err := db.Events(ctx, core.EventFilter{Scope: scope, Types: []string{string(core.EmailReceived)}, Limit: 200})
			if err != nil {
				t.Fatal(err)
			}
			byID := map[int64]bool{}
			for _, e := range events {
				var data map[string]any
				_ = json.Unmarshal(e.Data, &data)
				id, _ := data["ID"].(float64)
				byID[int64(id)] = true
			}
			if len(events) != stored {
				t.Errorf("%d events for %d messages stored", len(events), stored)
			}
			for i, id := range ids {
				if errs[i] == nil && !byID[id] {
					t.Errorf("no event names message %d (call %d)", id, i)
				}
			}
		})
	}
}
