package relay

import (
	"io"
	"net"
	"sync"
	"testing"

	"github.com/emersion/go-smtp"

	"github.com/callsign/callsign/adapters/transporttest"
)

// fakeMTA is a plain SMTP server on loopback, driven by the transport
// contract: it answers 451 to MAIL while throttling, 554 to DATA while
// refusing, and closes connections at once while unreachable.
type fakeMTA struct {
	mu     sync.Mutex
	answer transporttest.Answer
	got    []transporttest.Sent
}

func (f *fakeMTA) Received() []transporttest.Sent {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]transporttest.Sent(nil), f.got...)
}

func (f *fakeMTA) Answer(a transporttest.Answer) {
	f.mu.Lock()
	f.answer = a
	f.mu.Unlock()
}

func (f *fakeMTA) now() transporttest.Answer {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.answer
}

func (f *fakeMTA) NewSession(*smtp.Conn) (smtp.Session, error) {
	if f.now() == transporttest.Unreachable {
		return nil, &smtp.SMTPError{Code: 421, Message: "closing"}
	}
	return &fakeSession{f: f}, nil
}

type fakeSession struct {
	f  *fakeMTA
	to []string
}

func (s *fakeSession) Mail(string, *smtp.MailOptions) error {
	switch s.f.now() {
	case transporttest.Throttle:
		return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 7, 1}, Message: "slow down"}
	case transporttest.Fail:
		return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "local error in processing"}
	}
	return nil
}

func (s *fakeSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.to = append(s.to, to)
	return nil
}

func (s *fakeSession) Data(r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if s.f.now() == transporttest.Refuse {
		return &smtp.SMTPError{Code: 554, EnhancedCode: smtp.EnhancedCode{5, 6, 0}, Message: transporttest.Reason}
	}
	s.f.mu.Lock()
	s.f.got = append(s.f.got, transporttest.Sent{Recipients: s.to, Raw: data})
	s.f.mu.Unlock()
	return nil
}

func (s *fakeSession) Reset()        { s.to = nil }
func (s *fakeSession) Logout() error { return nil }

func contractHarness(tb testing.TB) transporttest.Harness {
	fake := &fakeMTA{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	srv := smtp.NewServer(fake)
	srv.Domain = "fake.test"
	go srv.Serve(ln)
	tb.Cleanup(func() { srv.Close() })
	host, port, _ := net.SplitHostPort(ln.Addr().String())
	return transporttest.Harness{Transport: New(Config{Host: host, Port: port}), Fake: fake, From: "bounces+token@agents.test"}
}

func TestTransportContract(t *testing.T) {
	transporttest.Run(t, func(t *testing.T) transporttest.Harness { return contractHarness(t) })
}

func BenchmarkTransport(b *testing.B) { transporttest.Bench(b, contractHarness(b)) }
