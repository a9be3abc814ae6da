package e2e

import (
	"fmt"
	"sync"
	"testing"

	"github.com/callsign/callsign/adapters/sqlstore"
)

// TestLastManagementKeyUnderConcurrentDeletes: an account's last two
// management keys deleted at the same moment (by the owner's access token,
// which no delete revokes): exactly one delete succeeds, the other is 409,
// and one key is left. Several rounds, since the race is one of timing.
func TestLastManagementKeyUnderConcurrentDeletes(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		r := start(t, d, nil)
		r.owner("keys@example.com")
		var pair struct{ Access string }
		if s := r.call("POST", "/api/auth/token/", "", map[string]string{"email": "keys@example.com", "password": ownerPassword}, &pair); s != 200 {
			t.Fatalf("sign in: %d", s)
		}
		for round := range 10 {
			var keys []struct {
				ID int64 `json:"id"`
			}
			for len(keys) < 2 {
				if s := r.call("POST", "/api/auth/keys/management/", pair.Access, map[string]any{"name": "k"}, nil); s != 201 {
					t.Fatalf("create: %d", s)
				}
				r.call("GET", "/api/auth/keys/management/", pair.Access, nil, &keys)
			}
			if len(keys) != 2 {
				t.Fatalf("round %d: %d keys", round, len(keys))
			}
			statuses := make([]int, 2)
			var wg sync.WaitGroup
			ready := make(chan struct{})
			for i, k := range keys {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-ready
					statuses[i], _ = r.callRaw("DELETE", fmt.Sprintf("/api/auth/keys/management/%d/", k.ID), pair.Access, nil)
				}()
			}
			close(ready)
			wg.Wait()
			if !(statuses[0] == 204 && statuses[1] == 409 || statuses[0] == 409 && statuses[1] == 204) {
				t.Fatalf("round %d: the two deletes answered %v; want one 204 and one 409", round, statuses)
			}
			r.call("GET", "/api/auth/keys/management/", pair.Access, nil, &keys)
			if len(keys) != 1 {
				t.Fatalf("round %d: %d management keys left; want 1", round, len(keys))
			}
		}
	})
}
