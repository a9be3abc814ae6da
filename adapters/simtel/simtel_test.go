package simtel

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

var (
	nanpNumber = regexp.MustCompile(`^\+1[2-9][0-9]{2}55501[0-9]{2}$`)
	gbNumber   = regexp.MustCompile(`^\+447700900[0-9]{3}$`)
	numberSID  = regexp.MustCompile(`^PN[0-9a-f]{32}$`)
	messageSID = regexp.MustCompile(`^SM[0-9a-f]{32}$`)
)

func buy(t *testing.T, s *Sim, country string) ports.BoughtNumber {
	t.Helper()
	n, err := s.BuyNumber(context.Background(), ports.BuyNumber{CountryCode: country, SMSWebhookURL: "http://127.0.0.1:8080/webhooks/sim/sms/"})
	if err != nil {
		t.Fatalf("BuyNumber(%s): %v", country, err)
	}
	return n
}

func invalid(t *testing.T, err error, want string) {
	t.Helper()
	e, ok := err.(*core.Error)
	if !ok || e.Kind != core.KindInvalid {
		t.Fatalf("error %v, want an invalid core error", err)
	}
	if got := e.Fields[core.NonFieldErrors]; len(got) != 1 || got[0] != want {
		t.Errorf("non_field_errors = %q, want [%q]", got, want)
	}
}

func TestName(t *testing.T) {
	if got := New().Name(); got != "sim" {
		t.Errorf("Name() = %q", got)
	}
}

func TestBuyNumberNANP(t *testing.T) {
	s := New()
	numbers, sids := map[string]bool{}, map[string]bool{}
	for i := range 1000 {
		country := []string{"US", "CA"}[i%2]
		n := buy(t, s, country)
		if !nanpNumber.MatchString(n.Number) || !IsSimulated(n.Number) || !core.IsE164(n.Number) {
			t.Errorf("%s number %q is outside +1 NXX 555 01XX", country, n.Number)
		}
		if !numberSID.MatchString(n.SID) {
			t.Errorf("sid %q is not PN + 32 hex digits", n.SID)
		}
		if want := (core.Capabilities{SMS: true, Voice: true}); n.Capabilities != want {
			t.Errorf("capabilities %+v, want %+v", n.Capabilities, want)
		}
		if numbers[n.Number] || sids[n.SID] {
			t.Fatalf("buy %d repeats %q / %q", i, n.Number, n.SID)
		}
		numbers[n.Number], sids[n.SID] = true, true
	}
}

func TestBuyNumberGBUntilFull(t *testing.T) {
	s := New()
	numbers := map[string]bool{}
	for range ofcom.size {
		n := buy(t, s, "GB")
		if !gbNumber.MatchString(n.Number) || !IsSimulated(n.Number) {
			t.Errorf("GB number %q is outside +44 7700 900XXX", n.Number)
		}
		if numbers[n.Number] {
			t.Fatalf("%q handed out twice", n.Number)
		}
		numbers[n.Number] = true
	}
	_, err := s.BuyNumber(context.Background(), ports.BuyNumber{CountryCode: "GB"})
	invalid(t, err, "the simulator has no numbers left in GB")
}

func TestBuyNumberUnsupportedCountry(t *testing.T) {
	_, err := New().BuyNumber(context.Background(), ports.BuyNumber{CountryCode: "FR"})
	invalid(t, err, "the simulator has no numbers in FR")
}

func TestIsSimulated(t *testing.T) {
	for number, want := range map[string]bool{
		"+12125550100":   true,
		"+19995550199":   true,
		"+447700900000":  true,
		"+447700900999":  true,
		"+12125550200":   false, // 555-0200 is a real exchange's
		"+11125550100":   false, // no area code starts with 1
		"+14155551234":   false,
		"+1415555010":    false,
		"+141555501000":  false,
		"+447700900":     false,
		"+447700901000":  false,
		"+33612345678":   false,
		"12125550100":    false,
		"+12125550100\n": false,
		"":               false,
	} {
		if got := IsSimulated(number); got != want {
			t.Errorf("IsSimulated(%q) = %v, want %v", number, got, want)
		}
	}
}

type inbound struct{ from, to, body, sid string }

func TestLocalDelivery(t *testing.T) {
	s := New()
	got := make(chan inbound, 1)
	release := make(chan struct{})
	var ctxErr error
	s.Inbound = func(ctx context.Context, from, to, body, sid string) {
		<-release
		ctxErr = ctx.Err()
		got <- inbound{from, to, body, sid}
	}
	a, b := buy(t, s, "US"), buy(t, s, "GB")

	ctx, cancel := context.WithCancel(context.Background())
	sent, err := s.SendSMS(ctx, ports.SendSMS{From: a.Number, To: b.Number, Body: "hello, b"})
	cancel() // the sender's request ends before delivery
	if err != nil {
		t.Fatal(err)
	}
	if sent.Status != core.SMSSent || !messageSID.MatchString(sent.SID) {
		t.Errorf("SendSMS = %+v, want sent with an SM sid", sent)
	}
	close(release)
	s.Wait()
	select {
	case m := <-got:
		if want := (inbound{a.Number, b.Number, "hello, b", m.sid}); m != want || m.sid == sent.SID || !messageSID.MatchString(m.sid) {
			t.Errorf("Inbound got %+v, want %+v with an SM sid of its own", m, want)
		}
	default:
		t.Fatal("Wait returned before Inbound ran")
	}
	if ctxErr != nil {
		t.Errorf("Inbound's context was ended by the sender's: %v", ctxErr)
	}
	if rec := s.Sent(); len(rec) != 1 || rec[0] != (Message{sent.SID, a.Number, b.Number, "hello, b", core.SMSSent}) {
		t.Errorf("Sent() = %+v", rec)
	}
}

func TestExternalSend(t *testing.T) {
	s := New()
	s.Inbound = func(_ context.Context, from, to, _, _ string) {
		t.Errorf("a message to %s reached Inbound", to)
	}
	from := buy(t, s, "US").Number
	sent, err := s.SendSMS(context.Background(), ports.SendSMS{From: from, To: "+442079460000", Body: "to the outside"})
	if err != nil {
		t.Fatal(err)
	}
	s.Wait()
	if sent.Status != core.SMSSent || !messageSID.MatchString(sent.SID) {
		t.Errorf("SendSMS = %+v, want sent with an SM sid", sent)
	}
	if rec := s.Sent(); len(rec) != 1 || rec[0] != (Message{sent.SID, from, "+442079460000", "to the outside", core.SMSSent}) {
		t.Errorf("Sent() = %+v", rec)
	}
}

// TestStrangerInTheFictionalRange: a simulated number that is not the
// service's (Serves says so) is a stranger: the text is sent and goes no
// further, so nothing downstream hears of a number nobody owns.
func TestStrangerInTheFictionalRange(t *testing.T) {
	s := New()
	a := buy(t, s, "US")
	s.Serves = func(_ context.Context, number string) bool { return number == a.Number }
	s.Inbound = func(_ context.Context, _, to, _, _ string) {
		if to != a.Number {
			t.Errorf("a text to the stranger %s reached Inbound", to)
		}
	}
	stranger, err := s.SendSMS(context.Background(), ports.SendSMS{From: a.Number, To: "+14155550100", Body: "anyone?"})
	if err != nil || stranger.Status != core.SMSSent {
		t.Fatalf("to a stranger: %+v, %v", stranger, err)
	}
	own, err := s.SendSMS(context.Background(), ports.SendSMS{From: "+14155550100", To: a.Number, Body: "to ours"})
	if err != nil || own.Status != core.SMSSent {
		t.Fatalf("to a number of ours: %+v, %v", own, err)
	}
	s.Wait()
}

// TestRelease: a released number is held no more; releasing a sid the
// simulator does not hold (from before a restart) succeeds.
func TestRelease(t *testing.T) {
	s := New()
	a, b := buy(t, s, "US"), buy(t, s, "GB")
	if held := s.Held(); held[a.SID] != a.Number || held[b.SID] != b.Number {
		t.Fatalf("held %v", held)
	}
	if err := s.ReleaseNumber(context.Background(), a.SID); err != nil {
		t.Fatal(err)
	}
	if held := s.Held(); len(held) != 1 || held[b.SID] != b.Number {
		t.Fatalf("after a release, held %v", held)
	}
	for _, sid := range []string{a.SID, "PN" + strings.Repeat("0", 32)} {
		if err := s.ReleaseNumber(context.Background(), sid); err != nil {
			t.Errorf("releasing %s again: %v", sid, err)
		}
	}
	invalid(t, s.ReleaseNumber(context.Background(), ""), "a phone number sid is required")
}

func TestLocalWithoutInbound(t *testing.T) {
	s := New()
	sent, err := s.SendSMS(context.Background(), ports.SendSMS{From: "+12125550100", To: "+12125550101", Body: "nobody listens"})
	if err != nil || sent.Status != core.SMSSent {
		t.Fatalf("SendSMS = %+v, %v", sent, err)
	}
	s.Wait()
	if len(s.Sent()) != 1 {
		t.Errorf("Sent() = %+v", s.Sent())
	}
}

// TestReportsDelivered: every text accepted, to a number of ours or to
// anyone else, is reported delivered; a report of a text the sender has
// not recorded yet is made again until it is known, and Wait waits for it.
func TestReportsDelivered(t *testing.T) {
	s := New()
	ours := buy(t, s, "US")
	s.Serves = func(_ context.Context, number string) bool { return number == ours.Number }
	var mu sync.Mutex
	known := map[string]bool{}
	tries := map[string]int{}
	s.Report = func(_ context.Context, sid string, status core.SMSStatus) bool {
		mu.Lock()
		defer mu.Unlock()
		if status != core.SMSDelivered {
			t.Errorf("reported %s", status)
		}
		tries[sid]++
		return known[sid]
	}
	var sids []string
	for _, to := range []string{ours.Number, "+14155550100", "+442079460000"} {
		sent, err := s.SendSMS(context.Background(), ports.SendSMS{From: ours.Number, To: to, Body: "hi"})
		if err != nil {
			t.Fatal(err)
		}
		sids = append(sids, sent.SID)
	}
	time.Sleep(50 * time.Millisecond) // the sender records the sids a little later
	mu.Lock()
	for _, sid := range sids {
		known[sid] = true
	}
	mu.Unlock()
	s.Wait()
	mu.Lock()
	defer mu.Unlock()
	for _, sid := range sids {
		if tries[sid] < 2 {
			t.Errorf("%s reported %d times; an unknown text is reported again", sid, tries[sid])
		}
	}
	// Once known, it is not reported again.
	last := tries[sids[0]]
	mu.Unlock()
	time.Sleep(100 * time.Millisecond)
	mu.Lock()
	if tries[sids[0]] != last {
		t.Errorf("reported again after it was known")
	}
}

func TestSendSMSInvalidTo(t *testing.T) {
	_, err := New().SendSMS(context.Background(), ports.SendSMS{From: "+12125550100", To: "555-0100", Body: "hi"})
	invalid(t, err, "The 'To' number 555-0100 is not a valid phone number.")
}

// TestWaitDrains sends from many goroutines to agents that answer every
// message once: Wait must also wait for the answers their handlers send.
func TestWaitDrains(t *testing.T) {
	s := New()
	var received atomic.Int64
	s.Inbound = func(ctx context.Context, from, to, body, _ string) {
		time.Sleep(10 * time.Millisecond)
		received.Add(1)
		if body != "re" {
			if _, err := s.SendSMS(ctx, ports.SendSMS{From: to, To: from, Body: "re"}); err != nil {
				t.Error(err)
			}
		}
	}
	const senders = 20
	var wg sync.WaitGroup
	for range senders {
		wg.Go(func() {
			a, b := buy(t, s, "CA"), buy(t, s, "GB")
			if _, err := s.SendSMS(context.Background(), ports.SendSMS{From: a.Number, To: b.Number, Body: "hi"}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	s.Wait()
	if got := received.Load(); got != 2*senders {
		t.Errorf("after Wait, %d messages received, want %d", got, 2*senders)
	}
	s.Wait() // nothing in flight: returns at once
}

func TestSentIsBounded(t *testing.T) {
	s := New()
	var last ports.SentSMS
	for range keepSent + 10 {
		var err error
		if last, err = s.SendSMS(context.Background(), ports.SendSMS{From: "+12125550100", To: "+442079460000", Body: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	rec := s.Sent()
	if len(rec) != keepSent || rec[len(rec)-1].SID != last.SID {
		t.Errorf("Sent() holds %d messages ending with %s, want %d ending with %s", len(rec), rec[len(rec)-1].SID, keepSent, last.SID)
	}
}

func TestNumberSettings(t *testing.T) {
	s := New()
	sid := buy(t, s, "US").SID
	if err := s.PointCalls(context.Background(), sid, ports.VoiceWebhooks{URL: "https://cs.example/webhooks/twilio/voice/"}); err != nil {
		t.Errorf("PointCalls: %v", err)
	}
	if err := s.ReleaseNumber(context.Background(), sid); err != nil {
		t.Errorf("ReleaseNumber: %v", err)
	}
	invalid(t, s.PointCalls(context.Background(), "", ports.VoiceWebhooks{}), "a phone number sid is required")
	invalid(t, s.ReleaseNumber(context.Background(), ""), "a phone number sid is required")
}

func TestVerifyWebhook(t *testing.T) {
	if New().VerifyWebhook("http://127.0.0.1:8080/webhooks/sim/sms/", nil, "anything") {
		t.Error("the simulator verified a signature")
	}
}
