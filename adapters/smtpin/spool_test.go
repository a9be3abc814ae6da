package smtpin_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

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

// TestDataPastTheInflightBudgetIs451UntilItFrees: while one large message
// holds the in-flight budget, another is answered 451 4.3.1 and stored
// nothing; once the first is stored the retry gets through.
func TestDataPastTheInflightBudgetIs451UntilItFrees(t *testing.T) {
	const budget = 2 << 20
	w := newWorldWith(t, nil, budget, func(o *smtpin.Options) { o.MaxInflightBytes = budget })
	big := bigMessage("big", budget*3/4)
	small := fixture(t, "plain.eml")

	// The large message is sent but for its end: past the spool
	// threshold it holds its share, the whole budget.
	a := w.dial()
	if err := a.Mail("s@example.org", nil); err != nil {
		t.Fatal(err)
	}
	if err := a.Rcpt("alice@agents.test", nil); err != nil {
		t.Fatal(err)
	}
	wc, err := a.Data()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wc.Write(big); err != nil {
		t.Fatal(err)
	}

	b := w.dial()
	var refused error
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if refused = send(b, "s@example.org", []string{"bob@agents.test"}, small); refused != nil {
			break
		}
	}
	wantCode(t, refused, 451, smtp.EnhancedCode{4, 3, 1})
	bobBefore := len(w.messages("bob"))

	// The first message ends and is stored; its budget frees and the
	// retry is stored too.
	if err := wc.Close(); err != nil {
		t.Fatalf("the message holding the budget: %v", err)
	}
	if err := send(b, "s@example.org", []string{"bob@agents.test"}, small); err != nil {
		t.Fatalf("the retry once the budget freed: %v", err)
	}
	if n := len(w.messages("alice")); n != 1 {
		t.Fatalf("alice has %d messages", n)
	}
	if n := len(w.messages("bob")); n != bobBefore+1 {
		t.Fatalf("bob has %d messages, had %d before the retry", n, bobBefore)
	}
	if !strings.Contains(w.logs.String(), "CALLSIGN_SMTP_MAX_INFLIGHT_BYTES") {
		t.Errorf("the refusal was not logged:\n%s", w.logs.String())
	}
}
