package app_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// TestTheTraceGoesIntoTheRoomBeforeTheSendersBytes: what goes on top of a
// received message is written into the room the adapter left before it,
// so the stored source is the buffer it was read into, not a copy; the
// room's own bytes are neither judged nor stored. A trace that does not
// fit is put on top of a copy.
func TestTheTraceGoesIntoTheRoomBeforeTheSendersBytes(t *testing.T) {
	w, _, p, in := sourceWorld(t)
	trace := []byte("Return-Path: <s@example.org>\r\nReceived: from client.example.org by mx.agents.test; Sat, 21 Nov 2026 08:00:00 +0000\r\n")
	for _, tc := range []struct {
		name     string
		room     int
		inBuffer bool
	}{{"room to spare", 1024, true}, {"room exactly", len(trace), true}, {"too little room", len(trace) - 1, false}, {"no room", 0, false}} {
		sent := []byte("From: s@example.org\r\nSubject: " + tc.name + "\r\nMessage-ID: <" + strings.ReplaceAll(tc.name, " ", ".") +
			"@example.org>\r\n\r\nbody\r\n")
		buf := append(bytes.Repeat([]byte{'#'}, tc.room), sent...)
		stored, err := w.app.Receiving.Deliver(w.ctx, app.InboundMail{EnvelopeFrom: "s@example.org", Inboxes: []core.Inbox{in},
			Raw: buf, Headroom: tc.room, Trace: trace, Origin: &ports.InboundOrigin{HELO: "client.example.org", MailFrom: "s@example.org"}})
		if err != nil || len(stored) != 1 {
			t.Fatalf("%s: stored %d, %v", tc.name, len(stored), err)
		}
		sum := sha256.Sum256(sent)
		if stored[0].Subject != tc.name || stored[0].SourceHash != hex.EncodeToString(sum[:]) {
			t.Errorf("%s: subject %q, source hash %s: the room was read as the sender's", tc.name, stored[0].Subject, stored[0].SourceHash)
		}
		source, err := w.app.Reading.Raw(w.ctx, p, stored[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		if want := append(append([]byte(nil), trace...), sent...); !bytes.Equal(source, want) {
			t.Errorf("%s: stored source\n%q\nwant\n%q", tc.name, source, want)
		}
		if shared := &source[len(source)-1] == &buf[len(buf)-1]; shared != tc.inBuffer {
			t.Errorf("%s: the stored source is the buffer read into: %v, want %v", tc.name, shared, tc.inBuffer)
		}
	}
}

// TestInboundRulesAreReadAgainAfterAChange: RCPT's rules come from a cache
// that a rule made or deleted through this instance empties at once, and
// that sees a change made elsewhere (another instance, here the store
// itself) within a second.
func TestInboundRulesAreReadAgainAfterAChange(t *testing.T) {
	w, _, p, in := sourceWorld(t)
	resolve := func() error {
		_, err := w.app.Receiving.ResolveRecipient(w.ctx, "stranger@elsewhere.example", in.Email)
		return err
	}
	if err := resolve(); err != nil {
		t.Fatalf("before any rule: %v", err)
	}
	rule, err := w.app.Rules.Create(w.ctx, p, app.RuleInput{Identity: in.IdentityID, Channel: "email", Direction: "inbound",
		Action: "block", Pattern: "stranger@elsewhere.example"})
	if err != nil {
		t.Fatal(err)
	}
	if err := resolve(); !errors.Is(err, app.ErrSenderRefused) {
		t.Fatalf("after a block made here: %v", err)
	}
	if err := w.store.DeleteRule(w.ctx, p.AccountID, rule.ID); err != nil {
		t.Fatal(err)
	}
	w.clock.Advance(time.Second)
	if err := resolve(); err != nil {
		t.Fatalf("a second after the block was deleted elsewhere: %v", err)
	}
}
