package mailgun

import (
	"context"
	"strings"
	"testing"

	"github.com/callsign/callsign/adapters/mailgun/mailguntest"
	"github.com/callsign/callsign/adapters/transporttest"
	"github.com/callsign/callsign/core"
)

func serve(tb testing.TB, key string) (*Mailgun, *mailguntest.Server) {
	srv := mailguntest.NewServer("agents.test")
	srv.Reason = transporttest.Reason
	hs := transporttest.ServeFake(tb, "Mailgun", srv)
	return New(Config{APIKey: key, APIBase: hs.URL + "/v3"}), srv
}

func harness(tb testing.TB) transporttest.Harness {
	m, srv := serve(tb, mailguntest.APIKey)
	return transporttest.Harness{Transport: m, Fake: srv, IDs: true, From: "bounces+token@agents.test"}
}

func TestTransportContract(t *testing.T) {
	transporttest.Run(t, func(t *testing.T) transporttest.Harness { return harness(t) })
}

func BenchmarkTransport(b *testing.B) { transporttest.Bench(b, harness(b)) }

// Mail goes out for the envelope sender's domain; the id comes back
// without Mailgun's angle brackets, as its events name it.
func TestSendsForTheSendersDomain(t *testing.T) {
	m, srv := serve(t, mailguntest.APIKey)
	out := m.Relay(context.Background(), "bounces+abc@agents.test", []string{"ann@example.net"}, []byte("Subject: x\r\n\r\nhi\r\n"))
	sent := srv.Sent()
	if len(sent) != 1 || sent[0].Domain != "agents.test" || "<"+out[0].ProviderID+">" != sent[0].ID {
		t.Fatalf("sent %+v, outcome %+v", sent, out)
	}
}

// A bad key or a domain Mailgun does not send for is ours to fix: mail
// waits, flagged as our credentials; a 500 waits too.
func TestFailuresThatWait(t *testing.T) {
	m, _ := serve(t, "key-wrong")
	o := m.Relay(context.Background(), "a@agents.test", []string{"ann@example.net"}, []byte("x\r\n"))[0]
	if o.Err == nil || o.Permanent || core.KindOf(o.Err) != core.KindUnauthorized || !strings.Contains(o.Err.Error(), "401") {
		t.Fatalf("bad key: %+v", o)
	}
	m, srv := serve(t, mailguntest.APIKey)
	o = m.Relay(context.Background(), "a@elsewhere.test", []string{"ann@example.net"}, []byte("x\r\n"))[0]
	if o.Err == nil || o.Permanent || core.KindOf(o.Err) != core.KindUnauthorized || !strings.Contains(o.Err.Error(), "Domain not found") {
		t.Fatalf("unknown domain: %+v", o)
	}
	srv.Answer(transporttest.Fail)
	o = m.Relay(context.Background(), "a@agents.test", []string{"ann@example.net"}, []byte("x\r\n"))[0]
	if o.Err == nil || o.Permanent || !strings.Contains(o.Err.Error(), "Mailgun 500") {
		t.Fatalf("500: %+v", o)
	}
}

func TestCheck(t *testing.T) {
	m, _ := serve(t, mailguntest.APIKey)
	if detail, err := m.Check(context.Background(), "agents.test"); err != nil || detail != "domain agents.test is active" {
		t.Fatalf("check: %q %v", detail, err)
	}
	if _, err := m.Check(context.Background(), "elsewhere.test"); core.KindOf(err) != core.KindUnauthorized {
		t.Fatalf("check of an unknown domain: %v", err)
	}
	m, _ = serve(t, "key-wrong")
	if _, err := m.Check(context.Background(), "agents.test"); core.KindOf(err) != core.KindUnauthorized {
		t.Fatalf("check with a bad key: %v", err)
	}
}
