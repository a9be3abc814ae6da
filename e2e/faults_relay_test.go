//go:build faults

package e2e

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"net/mail"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/callsign/callsign/adapters/sqlstore"
)

// The outbox's timings for the relay fault tests (CALLSIGN_OUTBOX_*): a
// retry within a second, a lease of 4 s (so an attempt is bounded by 2 s).
const (
	faultRetryMax = time.Second
	faultLease    = 4 * time.Second
)

// relayFaults is a service that sends through a relay the test controls
// (out): the SMTP relay, down, answering 451 or 550, slow to answer; or a
// provider's fake (SES, Mailgun), slow to answer; and the service stopped
// or killed in the middle of a delivery.
type relayFaults struct {
	*faultService
	out   mailFake
	relay *testRelay // when out is the SMTP relay
	c     *child
	api   string
	// queued is every message sent, by Message-ID: its id in the API.
	queued map[string]int64
	// refused are the Message-IDs sent to a recipient the relay refuses.
	refused map[string]bool
	// kills is how many times the service was killed with a delivery under way.
	kills   int
	figures []string
}

func newRelayFaults(t *testing.T, d sqlstore.Dialect) *relayFaults {
	relay := newTestRelay(t)
	relay.refuse = map[string]*smtp.SMTPError{}
	for i := range 10 {
		relay.refuse[fmt.Sprintf("refused-%d@example.org", i)] = &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such user"}
	}
	// A port for the relay, which is not listening yet.
	relay.addr = freeAddr(t)
	rf := newOutboxFaults(t, d, mailFake{
		env: map[string]string{"CALLSIGN_SMTP_RELAY": "smtp://relayuser:relaypass@" + relay.addr, "CALLSIGN_SMTP_RELAY_CA": relay.caFile},
		accepted: func() (raws [][]byte, _ []string) {
			for _, m := range relay.received() {
				raws = append(raws, []byte(m.data))
			}
			return raws, nil
		},
		problems: func() []string { return nil },
		hold:     func(d time.Duration) { relay.replyDelay.Store(int64(d)) },
	})
	rf.relay = relay
	return rf
}

// newOutboxFaults starts a service that sends through out, with the fault
// tests' outbox timings.
func newOutboxFaults(t *testing.T, d sqlstore.Dialect, out mailFake) *relayFaults {
	rf := &relayFaults{faultService: newFaultService(t, d, ""), out: out, queued: map[string]int64{}, refused: map[string]bool{}}
	for k, v := range out.env {
		rf.env[k] = v
	}
	for k, v := range map[string]string{
		"CALLSIGN_OUTBOX_RETRY":     "200ms",
		"CALLSIGN_OUTBOX_RETRY_MAX": faultRetryMax.String(),
		"CALLSIGN_OUTBOX_LEASE":     faultLease.String(),
		"CALLSIGN_SHUTDOWN_GRACE":   "5s",
	} {
		rf.env[k] = v
	}
	rf.restart()
	return rf
}

func (rf *relayFaults) restart() {
	rf.c, _, rf.api = rf.start()
}

func (rf *relayFaults) note(format string, args ...any) {
	rf.figures = append(rf.figures, fmt.Sprintf(format, args...))
	rf.t.Logf(format, args...)
}

// call sends a JSON request to the running child with the management key.
func (rf *relayFaults) call(method, path string, body, out any) int {
	rf.t.Helper()
	var b bytes.Buffer
	if body != nil {
		json.NewEncoder(&b).Encode(body)
	}
	req, _ := http.NewRequest(method, "http://"+rf.api+path, &b)
	req.Header.Set("Authorization", "Bearer "+rf.key)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		rf.t.Fatal(err)
	}
	defer res.Body.Close()
	if out != nil {
		if err := json.NewDecoder(res.Body).Decode(out); err != nil {
			rf.t.Fatalf("%s %s: %d: %v", method, path, res.StatusCode, err)
		}
	}
	return res.StatusCode
}

// queue sends n messages, to recipient(i) each, and returns their Message-IDs.
func (rf *relayFaults) queue(n int, recipient func(i int) string) []string {
	rf.t.Helper()
	var ids []string
	for i := range n {
		var m apiMessage
		if s := rf.call("POST", "/api/email-messages/compose/?identity="+rf.identity,
			map[string]any{"to_email": recipient(i), "subject": "fault", "content": "x"}, &m); s != 201 {
			rf.t.Fatalf("compose: %d", s)
		}
		id := strings.Trim(m.MessageID, "<>")
		rf.queued[id] = m.ID
		ids = append(ids, id)
	}
	return ids
}

// statuses reads the delivery status and error of every message sent, by Message-ID.
func (rf *relayFaults) statuses() map[string]apiMessage {
	rf.t.Helper()
	var page struct {
		Results []apiMessage `json:"results"`
	}
	if s := rf.call("GET", "/api/email-messages/?direction=outgoing&limit=200", nil, &page); s != 200 {
		rf.t.Fatalf("list: %d", s)
	}
	out := map[string]apiMessage{}
	for _, m := range page.Results {
		out[strings.Trim(m.MessageID, "<>")] = m
	}
	return out
}

// waitAll waits until every message of ids has a status that want
// accepts, and returns how long that took.
func (rf *relayFaults) waitAll(what string, ids []string, want func(apiMessage) bool) time.Duration {
	rf.t.Helper()
	start := time.Now()
	deadline := start.Add(60 * time.Second)
	for {
		st, done := rf.statuses(), 0
		for _, id := range ids {
			if want(st[id]) {
				done++
			}
		}
		if done == len(ids) {
			return time.Since(start)
		}
		if time.Now().After(deadline) {
			rf.t.Fatalf("%s: %d of %d after 60 s", what, done, len(ids))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func isSent(m apiMessage) bool { return m.DeliveryStatus == "sent" }

// kept counts the messages the relay (or provider) kept, by Message-ID.
func (rf *relayFaults) kept() map[string]int {
	seen := map[string]int{}
	raws, _ := rf.out.accepted()
	for _, raw := range raws {
		seen[rf.messageID(raw)]++
	}
	return seen
}

// messageID reads a kept message's Message-ID, without angle brackets.
func (rf *relayFaults) messageID(raw []byte) string {
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		rf.t.Fatal(err)
	}
	return strings.Trim(msg.Header.Get("Message-Id"), "<>")
}

// outbox reads what is waiting in the outbox: how many entries, the latest
// next attempt and the latest lease, against the database's clock unit
// (microseconds since the epoch).
func (rf *relayFaults) outbox() (entries int, nextAttempt, claimedUntil time.Time) {
	rf.query(`SELECT next_attempt_at, claimed_until FROM email_outbox`, func(rows *sql.Rows) error {
		var next, claimed int64
		err := rows.Scan(&next, &claimed)
		entries++
		if t := time.UnixMicro(next); t.After(nextAttempt) {
			nextAttempt = t
		}
		if t := time.UnixMicro(claimed); t.After(claimedUntil) {
			claimedUntil = t
		}
		return err
	})
	return
}

// noneWaitsPastOneRetry checks, after an outage, that every waiting
// message's next attempt is within one retry interval (the longest) of now.
func (rf *relayFaults) noneWaitsPastOneRetry(what string) {
	rf.t.Helper()
	now := time.Now()
	n, next, _ := rf.outbox()
	if n > 0 && next.After(now.Add(faultRetryMax)) {
		rf.t.Errorf("%s: a message waits until %v, past one retry interval (%v) from now", what, next.Sub(now).Round(time.Millisecond), faultRetryMax)
	}
}

// relayDown: the relay does not answer at all; the messages wait, each
// tried at least once, and go out once it listens.
func (rf *relayFaults) relayDown() {
	ids := rf.queue(10, func(i int) string { return fmt.Sprintf("down-%d@example.org", i) })
	rf.waitAll("every message tried with the relay down", ids, func(m apiMessage) bool {
		return m.DeliveryStatus == "queued" && m.DeliveryError != nil && *m.DeliveryError != ""
	})
	rf.noneWaitsPastOneRetry("relay down")
	rf.relay.listen(rf.t, rf.relay.addr)
	took := rf.waitAll("every message sent once the relay is up", ids, isSent)
	rf.note("relay down: 10 queued, all tried while it was down, all sent %v after it came up", took.Round(time.Millisecond))
}

// relayBusy: the relay answers 451 to every recipient for a while.
func (rf *relayFaults) relayBusy() {
	rf.relay.busy.Store(true)
	before := rf.relay.deferred.Load()
	ids := rf.queue(10, func(i int) string { return fmt.Sprintf("busy-%d@example.org", i) })
	rf.waitAll("every message deferred by a 451", ids, func(m apiMessage) bool {
		return m.DeliveryStatus == "queued" && m.DeliveryError != nil && strings.Contains(*m.DeliveryError, "451")
	})
	rf.noneWaitsPastOneRetry("relay answering 451")
	rf.relay.busy.Store(false)
	took := rf.waitAll("every message sent once the relay takes mail", ids, isSent)
	rf.note("relay 451: 10 queued, %d RCPTs answered 451, all sent %v after it took mail again",
		rf.relay.deferred.Load()-before, took.Round(time.Millisecond))
}

// relayRefuses: the relay answers 550: each message is failed, with one
// email.failed event, and never retried.
func (rf *relayFaults) relayRefuses() {
	ids := rf.queue(10, func(i int) string { return fmt.Sprintf("refused-%d@example.org", i) })
	for _, id := range ids {
		rf.refused[id] = true
	}
	took := rf.waitAll("every refused message failed", ids, func(m apiMessage) bool { return m.DeliveryStatus == "failed" })
	var events struct {
		Results []struct {
			Data struct {
				MessageID string `json:"message_id"`
			} `json:"data"`
		} `json:"results"`
	}
	if s := rf.call("GET", "/api/events/?types=email.failed&limit=200", nil, &events); s != 200 {
		rf.t.Fatalf("events: %d", s)
	}
	failedEvents := map[string]int{}
	for _, e := range events.Results {
		failedEvents[strings.Trim(e.Data.MessageID, "<>")]++
	}
	for _, id := range ids {
		if failedEvents[id] != 1 {
			rf.t.Errorf("%s: %d email.failed events; want 1", id, failedEvents[id])
		}
	}
	rf.note("relay 550: 10 queued, 10 failed within %v, %d email.failed events", took.Round(time.Millisecond), len(events.Results))
}

// stopDuringDelivery stops the service with sig while the relay holds its
// answer to a message it has kept, starts it again, and waits for the rest.
func (rf *relayFaults) stopDuringDelivery(sig syscall.Signal, hold time.Duration) {
	name := map[syscall.Signal]string{syscall.SIGTERM: "SIGTERM", syscall.SIGKILL: "kill -9"}[sig]
	rf.out.hold(hold)
	raws, _ := rf.out.accepted()
	kept := len(raws)
	ids := rf.queue(10, func(i int) string { return fmt.Sprintf("%s-%d@example.org", strings.ReplaceAll(name, " ", ""), i) })
	deadline := time.Now().Add(30 * time.Second)
	for len(raws) < kept+2 { // the second is being held
		if time.Now().After(deadline) {
			rf.t.Fatalf("%s: the relay got no mail", name)
		}
		time.Sleep(5 * time.Millisecond)
		raws, _ = rf.out.accepted()
	}
	held := rf.messageID(raws[kept+1])
	stoppedAt := time.Now()
	rf.c.cmd.Process.Signal(sig)
	<-rf.c.exited
	stopTook := time.Since(stoppedAt)
	if sig == syscall.SIGKILL {
		rf.kills++
	}
	// What the stop left: a SIGTERM leaves no entry leased (the attempt
	// under way was recorded, nothing else was claimed); a kill -9 leaves
	// at most the one entry under way, leased no longer than one lease.
	n, _, claimed := rf.outbox()
	leased := claimed.After(time.Now())
	switch {
	case sig == syscall.SIGTERM && leased:
		rf.t.Errorf("SIGTERM left an entry leased until %v", claimed)
	case claimed.After(stoppedAt.Add(faultLease)):
		rf.t.Errorf("%s left an entry leased for %v, past one lease", name, claimed.Sub(stoppedAt))
	}
	rf.out.hold(0)
	restartedAt := time.Now()
	rf.restart()
	rf.waitAll(name+": every message sent after the restart", ids, isSent)
	// The message whose answer was held: a SIGTERM waits for the answer
	// and records it; a kill -9 never hears it, so the message goes again.
	if n, want := rf.kept()[held], map[syscall.Signal]int{syscall.SIGTERM: 1, syscall.SIGKILL: 2}[sig]; n != want {
		rf.t.Errorf("%s: the message under way when the service stopped reached the relay %d times; want %d", name, n, want)
	}
	rf.note("%s during delivery: 10 queued, stopped in %v with %d waiting (one leased: %v); after the restart all sent in %v",
		name, stopTook.Round(time.Millisecond), n, leased, time.Since(restartedAt).Round(time.Millisecond))
}

// tally checks the relay's count of every message: once each (refused
// ones never), with at most one more per kill -9 (the attempt under way
// when the process died, sent again after its lease: the documented
// at-least-once window), and none more than twice.
func (rf *relayFaults) tally() {
	for _, p := range rf.out.problems() {
		rf.t.Errorf("a request broke the provider's published reference: %s", p)
	}
	seen := rf.kept()
	delivered, duplicated, failed := 0, 0, 0
	for id := range rf.queued {
		n := seen[id]
		switch {
		case rf.refused[id]:
			failed++
			if n != 0 {
				rf.t.Errorf("%s was refused but reached the relay %d times", id, n)
			}
		case n == 0:
			rf.t.Errorf("%s never reached the relay", id)
		case n > 2:
			rf.t.Errorf("%s reached the relay %d times; want at most twice", id, n)
			fallthrough
		default:
			delivered++
			duplicated += n - 1
		}
	}
	rf.note("queued %d, delivered %d, duplicated %d (kill -9 under way: %d), failed %d", len(rf.queued), delivered, duplicated, rf.kills, failed)
	if duplicated > rf.kills {
		rf.t.Errorf("%d duplicates from %d kills: more than the one attempt under way each", duplicated, rf.kills)
	}
}

// TestFaultRelay: the relay down, answering 451, answering 550, and the
// service stopped (SIGTERM) and killed (kill -9) in the middle of a
// delivery, on SQLite and PostgreSQL: every message is delivered exactly
// once (a kill -9 may repeat the one attempt under way) or recorded
// failed, and none waits past one retry interval (one lease after a kill).
func TestFaultRelay(t *testing.T) {
	forEachDialectInTurn(t, func(t *testing.T, d sqlstore.Dialect) {
		rf := newRelayFaults(t, d)
		rf.relayDown()
		rf.relayBusy()
		rf.relayRefuses()
		rf.stopDuringDelivery(syscall.SIGTERM, time.Second)
		for range 3 {
			rf.stopDuringDelivery(syscall.SIGKILL, 500*time.Millisecond)
		}
		rf.tally()
		rf.c.cmd.Process.Signal(syscall.SIGTERM)
		rf.c.exitCode(t)
	})
}

// TestFaultRelayProviders: the service killed (kill -9) while SES or
// Mailgun holds its answer to a message it has kept, on SQLite and
// PostgreSQL: after the restart every message reaches the provider, at
// most once more per kill (the attempt under way), as with the SMTP relay.
func TestFaultRelayProviders(t *testing.T) {
	for _, p := range []struct {
		name string
		fake func(*testing.T) mailFake
	}{{"ses", sesFake}, {"mailgun", mailgunFake}} {
		t.Run(p.name, func(t *testing.T) {
			forEachDialectInTurn(t, func(t *testing.T, d sqlstore.Dialect) {
				rf := newOutboxFaults(t, d, p.fake(t))
				for range 3 {
					rf.stopDuringDelivery(syscall.SIGKILL, 500*time.Millisecond)
				}
				rf.tally()
				rf.c.cmd.Process.Signal(syscall.SIGTERM)
				rf.c.exitCode(t)
			})
		})
	}
}
