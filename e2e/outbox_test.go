package e2e

import (
	"fmt"
	"net/mail"
	"strings"
	"testing"
	"time"

	"github.com/callsign/callsign/adapters/sqlstore"
)

// TestOutboxShutdownMidDelivery: the service stops while the relay holds
// its reply to a message it has kept. The attempt under way finishes within
// the grace period and its outcome is recorded; nothing else was claimed,
// so after a restart on the same database the rest go out at once (not
// after the 5-minute lease), and the relay gets every message exactly once.
func TestOutboxShutdownMidDelivery(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		relay := newTestRelay(t)
		relay.inData = make(chan struct{}, 16)
		relay.replyDelay.Store(int64(1500 * time.Millisecond))
		relay.listen(t, "127.0.0.1:0")
		r := start(t, d, map[string]string{
			"CALLSIGN_SMTP_RELAY":     "smtp://relayuser:relaypass@" + relay.addr,
			"CALLSIGN_SMTP_RELAY_CA":  relay.caFile,
			"CALLSIGN_SHUTDOWN_GRACE": "10s",
		}, fastRetry)
		mgmt := r.bootstrap("stop@example.com")
		var ident struct{ UUID string }
		r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "Sender"}, &ident)
		var ids []int64
		for i := range 3 {
			var m apiMessage
			if s := r.call("POST", "/api/email-messages/compose/?identity="+ident.UUID, mgmt,
				map[string]any{"to_email": fmt.Sprintf("bob%d@example.org", i), "subject": "n", "content": "x"}, &m); s != 201 {
				t.Fatalf("compose: %d", s)
			}
			ids = append(ids, m.ID)
		}
		select {
		case <-relay.inData:
		case <-time.After(10 * time.Second):
			t.Fatal("no delivery began")
		}
		r.stop() // SIGTERM's path: the context ends, the drain waits
		relay.replyDelay.Store(0)
		go func() {
			for range relay.inData {
			}
		}()
		again := start(t, d, r.env, fastRetry)
		poll(t, "every message sent after the restart", func() bool {
			for _, id := range ids {
				var m apiMessage
				again.call("GET", fmt.Sprintf("/api/email-messages/%d/", id), mgmt, nil, &m)
				if m.DeliveryStatus != "sent" {
					return false
				}
			}
			return true
		})
		time.Sleep(300 * time.Millisecond)
		seen := map[string]int{}
		for _, m := range relay.received() {
			msg, err := mail.ReadMessage(strings.NewReader(m.data))
			if err != nil {
				t.Fatal(err)
			}
			seen[msg.Header.Get("Message-Id")]++
		}
		if len(seen) != 3 {
			t.Errorf("the relay got %d distinct messages: %v", len(seen), seen)
		}
		for id, n := range seen {
			if n != 1 {
				t.Errorf("%s reached the relay %d times", id, n)
			}
		}
	})
}
