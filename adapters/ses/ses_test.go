package ses

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"

	"github.com/callsign/callsign/adapters/ses/sestest"
	"github.com/callsign/callsign/adapters/transporttest"
	"github.com/callsign/callsign/core"
)

// TestMain gives the SDK's default chain static credentials and keeps it
// from asking for instance metadata (169.254.169.254) off this machine.
func TestMain(m *testing.M) {
	os.Setenv("AWS_ACCESS_KEY_ID", sestest.AccessKeyID)
	os.Setenv("AWS_SECRET_ACCESS_KEY", sestest.SecretAccessKey)
	os.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	os.Exit(m.Run())
}

func serve(tb testing.TB, cfg Config) (*SES, *sestest.Server) {
	srv := &sestest.Server{Reason: transporttest.Reason}
	hs := transporttest.ServeFake(tb, "SES", srv)
	cfg.Region, cfg.Endpoint = sestest.Region, hs.URL
	s, err := New(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return s, srv
}

func harness(tb testing.TB) transporttest.Harness {
	s, srv := serve(tb, Config{})
	return transporttest.Harness{Transport: s, Fake: srv, IDs: true, From: "bounces+token@agents.test"}
}

func TestTransportContract(t *testing.T) {
	transporttest.Run(t, func(t *testing.T) transporttest.Harness { return harness(t) })
}

func BenchmarkTransport(b *testing.B) { transporttest.Bench(b, harness(b)) }

// The envelope sender and the configuration set go with every request,
// and the provider's id comes back on each recipient.
func TestSendsWithSenderAndConfigurationSet(t *testing.T) {
	s, srv := serve(t, Config{ConfigurationSet: "callsign-events"})
	out := s.Relay(context.Background(), "bounces+abc@agents.test", []string{"ann@example.net"}, []byte("Subject: x\r\n\r\nhi\r\n"))
	sent := srv.Sent()
	if len(sent) != 1 || sent[0].From != "bounces+abc@agents.test" || sent[0].ConfigurationSet != "callsign-events" || out[0].ProviderID != sent[0].MessageID {
		t.Fatalf("sent %+v, outcome %+v", sent, out)
	}
}

// SES failing (500) is tried again later; a configuration SES does not
// know is ours to fix: tried later, and flagged as our credentials.
func TestFailuresThatWait(t *testing.T) {
	s, srv := serve(t, Config{})
	srv.Answer(transporttest.Fail)
	o := s.Relay(context.Background(), "a@agents.test", []string{"ann@example.net"}, []byte("x\r\n"))[0]
	if o.Err == nil || o.Permanent || !strings.Contains(o.Err.Error(), "InternalFailure") {
		t.Fatalf("500: %+v", o)
	}
	s.client = withKey(s, "AKIDWRONG")
	o = s.Relay(context.Background(), "a@agents.test", []string{"ann@example.net"}, []byte("x\r\n"))[0]
	if o.Err == nil || o.Permanent || core.KindOf(o.Err) != core.KindUnauthorized {
		t.Fatalf("unknown key: %+v (kind %v)", o, core.KindOf(o.Err))
	}
}

func TestCheck(t *testing.T) {
	s, _ := serve(t, Config{})
	detail, err := s.Check(context.Background())
	if err != nil || !strings.Contains(detail, "production account, sending enabled") {
		t.Fatalf("check: %q %v", detail, err)
	}
	s.client = withKey(s, "AKIDWRONG")
	if _, err := s.Check(context.Background()); core.KindOf(err) != core.KindUnauthorized {
		t.Fatalf("check with an unknown key: %v", err)
	}
}

// withKey is s's client signing with another access key.
func withKey(s *SES, id string) *sesv2.Client {
	return sesv2.New(s.client.Options(), func(o *sesv2.Options) {
		o.Credentials = credentials.NewStaticCredentialsProvider(id, sestest.SecretAccessKey, "")
	})
}
