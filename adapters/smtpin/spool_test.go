package smtpin_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/emersion/go-smtp"

	"github.com/callsign/callsign/adapters/smtpin"
)

// bigMessage is a message of about size bytes: a base64 attachment of
// random bytes, CRLF line endings, so that what is stored can be compared
// byte for byte with what was sent.
func bigMessage(subject string, size int) []byte {
	data := make([]byte, size*3/4)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	enc := base64.StdEncoding.EncodeToString(data)
	var b strings.Builder
	b.WriteString("From: s@example.org\r\nTo: alice@agents.test\r\nSubject: " + subject + "\r\nMIME-Version: 1.0\r\n" +
		"Content-Type: multipart/mixed; boundary=b1\r\n\r\n--b1\r\nContent-Type: text/plain\r\n\r\nSee attached.\r\n" +
		"--b1\r\nContent-Type: application/octet-stream\r\nContent-Transfer-Encoding: base64\r\n" +
		"Content-Disposition: attachment; filename=data.bin\r\n\r\n")
	for len(enc) > 76 {
		b.WriteString(enc[:76] + "\r\n")
		enc = enc[76:]
	}
	b.WriteString(enc + "\r\n--b1--\r\n")
	return []byte(b.String())
}

// TestMessagePastTheSpoolThresholdIsStoredByteExact: a message read
// through a temporary file is stored as it was sent, under the trace.
func TestMessagePastTheSpoolThresholdIsStoredByteExact(t *testing.T) {
	w := newWorldWith(t, nil, 8<<20, func(o *smtpin.Options) { o.SpoolDir = t.TempDir() })
	raw := bigMessage("big", 3*smtpin.SpoolThreshold)
	if err := send(w.dial(), "s@example.org", []string{"alice@agents.test"}, raw); err != nil {
		t.Fatal(err)
	}
	msgs := w.messages("alice")
	if len(msgs) != 1 {
		t.Fatalf("stored %d messages", len(msgs))
	}
	stored, err := w.store.RawMessage(context.Background(), w.owner.AccountID, msgs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	top, found := bytes.CutSuffix(stored, raw)
	if !found || !bytes.HasPrefix(top, []byte("Return-Path: <s@example.org>\r\nReceived: ")) || len(top) > 1024 {
		t.Fatalf("stored %d bytes for %d sent; the sent bytes are not its end under the trace", len(stored), len(raw))
	}
}

// TestDataPastTheInflightBudgetIs451UntilItFrees: two large messages
// arrive at once and the budget holds one: whichever reserves the size
// limit first is stored, the other is answered 451 4.3.1 and stored
// nothing, and its retry gets through once the first is stored. (Which one
// wins is a race, so the test asserts the outcome, not the order.)
func TestDataPastTheInflightBudgetIs451UntilItFrees(t *testing.T) {
	const budget = 2 << 20
	w := newWorldWith(t, nil, budget, func(o *smtpin.Options) { o.MaxInflightBytes = budget })
	type sending struct {
		to  string
		raw []byte
		wc  io.WriteCloser
	}
	// Both are sent but for their end: each is past the spool threshold,
	// where a message reserves the size limit, the whole budget.
	started := []*sending{{to: "alice"}, {to: "bob"}}
	for _, m := range started {
		m.raw = bigMessage("big for "+m.to, budget*3/4)
		c := w.dial()
		if err := c.Mail("s@example.org", nil); err != nil {
			t.Fatal(err)
		}
		if err := c.Rcpt(m.to+"@agents.test", nil); err != nil {
			t.Fatal(err)
		}
		wc, err := c.Data()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := wc.Write(m.raw); err != nil {
			t.Fatal(err)
		}
		m.wc = wc
	}
	var refused []*sending
	for _, m := range started {
		if err := m.wc.Close(); err != nil {
			wantCode(t, err, 451, smtp.EnhancedCode{4, 3, 1})
			refused = append(refused, m)
		}
	}
	if len(refused) != 1 {
		t.Fatalf("%d of the two messages were refused; the budget holds exactly one", len(refused))
	}
	retry := refused[0]
	if n := len(w.messages(retry.to)); n != 0 {
		t.Fatalf("the refused message was stored anyway (%d)", n)
	}
	// The first is stored and its budget is free: the retry gets through.
	if err := send(w.dial(), "s@example.org", []string{retry.to + "@agents.test"}, retry.raw); err != nil {
		t.Fatalf("the retry once the budget freed: %v", err)
	}
	for _, who := range []string{"alice", "bob"} {
		if n := len(w.messages(who)); n != 1 {
			t.Fatalf("%s has %d messages", who, n)
		}
	}
	if !strings.Contains(w.logs.String(), "CALLSIGN_SMTP_MAX_INFLIGHT_BYTES") {
		t.Errorf("the refusal was not logged:\n%s", w.logs.String())
	}
}
