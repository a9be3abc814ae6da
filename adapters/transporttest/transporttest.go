// Package transporttest is the contract every mail transport (a
// ports.MailRelay: the SMTP relay, Amazon SES, Mailgun) passes against a
// local fake of its provider: our exact bytes reach every envelope
// recipient once, and the provider's answers map to the outbox's three
// outcomes (accepted with the provider's id, try later, refused for good).
package transporttest

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/callsign/callsign/ports"
)

// Answer is what a fake provider says to the sends that follow.
type Answer int

const (
	// Accept takes the message for every recipient.
	Accept Answer = iota
	// Throttle answers as the provider does when it wants us to slow
	// down (429, SMTP 4xx): try later.
	Throttle
	// Fail answers as the provider does when it fails inside (500, SMTP
	// 4xx local error): try later.
	Fail
	// Refuse refuses the message for good, naming the content or the
	// recipient (HTTP 400, SMTP 5xx), with Reason in its answer.
	Refuse
	// Unreachable closes connections without answering.
	Unreachable
)

// Reason is the text a fake puts in a refusal; the transport must carry it
// into the outcome's error, which the API shows as delivery_error.
const Reason = "fake provider refuses this content"

// Sent is a message as the provider received it.
type Sent struct {
	Recipients []string
	Raw        []byte
}

// Fake is a provider's local stand-in as the suite drives it.
type Fake interface {
	// Received lists the messages the fake accepted, in order.
	Received() []Sent
	// Answer sets what the fake says to every send from now on.
	Answer(a Answer)
}

// Harness is one transport wired to its fake.
type Harness struct {
	Transport ports.MailRelay
	Fake      Fake
	// IDs says the transport reports the provider's id of what it accepted.
	IDs bool
	// From is the envelope sender to relay with: its domain is the one the
	// provider knows (Mailgun sends for that domain).
	From string
}

// message is what the suite sends: DKIM-signed bytes with what a careless
// transport would change: CRLF line ends, a line of only a dot, folded
// headers, trailing spaces and 8-bit UTF-8.
var message = []byte("DKIM-Signature: v=1; a=rsa-sha256; c=relaxed/relaxed; d=agents.test; s=s1;\r\n" +
	"\th=from:to:subject; bh=deadbeef; b=c2lnbmF0dXJl\r\n" +
	"From: Agent <agent@agents.test>\r\nTo: ann@example.net\r\nSubject: Contract =?utf-8?q?caf=C3=A9?=\r\n" +
	"Message-ID: <contract@agents.test>\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n" +
	"Content-Transfer-Encoding: 8bit\r\n\r\nLine one with trailing spaces   \r\n.\r\n..two dots\r\ncafé ☕\r\nlast line\r\n")

// Run runs the contract; newHarness makes a fresh transport and fake for
// each subtest.
func Run(t *testing.T, newHarness func(t *testing.T) Harness) {
	ctx := context.Background()
	t.Run("our exact bytes reach every recipient once", func(t *testing.T) {
		h := newHarness(t)
		rcpts := []string{"ann@example.net", "Bob@Example.org"}
		out := h.Transport.Relay(ctx, h.From, rcpts, message)
		wantOutcomes(t, out, rcpts)
		for _, o := range out {
			if o.Err != nil {
				t.Fatalf("%s: %v", o.Recipient, o.Err)
			}
			if h.IDs && o.ProviderID == "" {
				t.Errorf("%s: accepted without the provider's id", o.Recipient)
			}
		}
		got := h.Fake.Received()
		if len(got) != 1 {
			t.Fatalf("the provider received %d messages, want 1", len(got))
		}
		if !bytes.Equal(got[0].Raw, message) {
			t.Errorf("the provider received other bytes:\n%q\nwant\n%q", got[0].Raw, message)
		}
		if !sameSet(got[0].Recipients, rcpts) {
			t.Errorf("envelope recipients %v, want %v", got[0].Recipients, rcpts)
		}
	})
	t.Run("many recipients are each reached once", func(t *testing.T) {
		// More than one request's worth at SES (50): the transport splits them.
		h := newHarness(t)
		var rcpts []string
		for i := range 120 {
			rcpts = append(rcpts, fmt.Sprintf("r%03d@example.net", i))
		}
		out := h.Transport.Relay(ctx, h.From, rcpts, message)
		wantOutcomes(t, out, rcpts)
		for _, o := range out {
			if o.Err != nil {
				t.Fatalf("%s: %v", o.Recipient, o.Err)
			}
		}
		var reached []string
		for _, s := range h.Fake.Received() {
			if !bytes.Equal(s.Raw, message) {
				t.Fatal("a part of the split send carried other bytes")
			}
			reached = append(reached, s.Recipients...)
		}
		if !sameSet(reached, rcpts) || len(reached) != len(rcpts) {
			t.Errorf("reached %d recipients (%v), want each of %d once", len(reached), reached, len(rcpts))
		}
	})
	for _, tc := range []struct {
		name      string
		answer    Answer
		permanent bool
	}{
		{"a throttling provider means try later", Throttle, false},
		{"a failing provider means try later", Fail, false},
		{"an unreachable provider means try later", Unreachable, false},
		{"a refusal of the content is for good, with the provider's reason", Refuse, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.Fake.Answer(tc.answer)
			rcpts := []string{"ann@example.net", "bob@example.org"}
			out := h.Transport.Relay(ctx, h.From, rcpts, message)
			wantOutcomes(t, out, rcpts)
			for _, o := range out {
				if o.Err == nil || o.Permanent != tc.permanent || o.ProviderID != "" {
					t.Fatalf("%s: err %v, permanent %v, id %q; want an error, permanent %v, no id", o.Recipient, o.Err, o.Permanent, o.ProviderID, tc.permanent)
				}
				if tc.answer == Refuse && !strings.Contains(o.Err.Error(), Reason) {
					t.Errorf("the refusal %q lacks the provider's reason %q", o.Err, Reason)
				}
			}
			if n := len(h.Fake.Received()); n != 0 {
				t.Errorf("the fake kept %d messages it did not accept", n)
			}
			// The same transport sends once the provider is back.
			h.Fake.Answer(Accept)
			for _, o := range h.Transport.Relay(ctx, h.From, rcpts, message) {
				if o.Err != nil {
					t.Fatalf("after recovery, %s: %v", o.Recipient, o.Err)
				}
			}
		})
	}
	t.Run("no recipients, no request", func(t *testing.T) {
		h := newHarness(t)
		if out := h.Transport.Relay(ctx, h.From, nil, message); len(out) != 0 || len(h.Fake.Received()) != 0 {
			t.Fatalf("outcomes %v, received %d", out, len(h.Fake.Received()))
		}
	})
	t.Run("a cancelled attempt means try later", func(t *testing.T) {
		h := newHarness(t)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		for _, o := range h.Transport.Relay(cctx, h.From, []string{"ann@example.net"}, message) {
			if o.Err == nil || o.Permanent {
				t.Fatalf("cancelled: err %v, permanent %v", o.Err, o.Permanent)
			}
		}
	})
}

// wantOutcomes checks there is one outcome per recipient, in their order.
func wantOutcomes(t *testing.T, out []ports.RelayOutcome, rcpts []string) {
	t.Helper()
	if len(out) != len(rcpts) {
		t.Fatalf("%d outcomes for %d recipients", len(out), len(rcpts))
	}
	for i, o := range out {
		if o.Recipient != rcpts[i] {
			t.Fatalf("outcome %d is for %q, want %q", i, o.Recipient, rcpts[i])
		}
	}
}

func sameSet(a, b []string) bool {
	norm := func(l []string) []string {
		out := make([]string, len(l))
		for i, s := range l {
			out[i] = strings.ToLower(s)
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(norm(a), norm(b))
}

// benchMessage is a typical agent's message: a few KiB of text.
var benchMessage = append(bytes.Clone(message[:bytes.Index(message, []byte("\r\n\r\n"))+4]), bytes.Repeat([]byte("A line of an agent's reply, wrapped at 72 columns as mail should be...\r\n"), 56)...)

// Bench measures one transport's throughput against its fake: one message
// to one recipient per operation. It reports messages/s, and the CPU
// (user+system, of the whole process: the fake's share included) per
// message, beside allocations.
func Bench(b *testing.B, h Harness) {
	ctx := context.Background()
	rcpts := []string{"ann@example.net"}
	b.ReportAllocs()
	b.SetBytes(int64(len(benchMessage)))
	before := cpuTime()
	b.ResetTimer()
	for b.Loop() {
		if o := h.Transport.Relay(ctx, h.From, rcpts, benchMessage); o[0].Err != nil {
			b.Fatal(o[0].Err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	b.ReportMetric(float64((cpuTime()-before).Microseconds())/float64(b.N), "cpu-µs/msg")
}
