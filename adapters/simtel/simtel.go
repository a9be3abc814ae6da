// Package simtel is a phone network in memory, the default ports.Telephony:
// Callsign runs on a laptop and in tests with no provider account and no
// network. Its numbers come from ranges reserved for fiction, so none of
// them can reach a real phone. A text to a number of this service is
// delivered here, to its identity; a text to any other number (a stranger
// in the fictional ranges, or a real phone) is recorded as sent and goes
// no further.
package simtel

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// numberRange is a block of fictional numbers, indexed 0..size-1.
type numberRange struct {
	size   int
	number func(i int) string
}

var (
	// nanp is +1 NXX 555 01XX: 555-0100..0199 is reserved for fiction in
	// every North American area code. The US and Canada share it.
	nanp = &numberRange{8 * 100 * 100, func(i int) string {
		return fmt.Sprintf("+1%d%02d55501%02d", 2+i/10000, i/100%100, i%100)
	}}
	// ofcom is +44 7700 900XXX, Ofcom's range for drama.
	ofcom = &numberRange{1000, func(i int) string {
		return fmt.Sprintf("+447700900%03d", i)
	}}

	ranges    = map[string]*numberRange{"US": nanp, "CA": nanp, "GB": ofcom}
	simulated = regexp.MustCompile(`^(\+1[2-9][0-9]{2}55501[0-9]{2}|\+447700900[0-9]{3})$`)
)

// keepSent bounds the record of sent messages, so that a simulator left
// running does not grow without end.
const keepSent = 1000

// IsSimulated reports whether number is in one of the simulator's ranges,
// that is, whether a message to it stays inside the simulator.
func IsSimulated(number string) bool { return simulated.MatchString(number) }

// Message is a message the simulator accepted.
type Message struct {
	SID    string
	From   string
	To     string
	Body   string
	Status core.SMSStatus
}

// Sim is the simulated provider. Build it with New.
type Sim struct {
	// Inbound receives each message sent to a simulated number, as Twilio's
	// SMS webhook would. It runs in its own goroutine with a background
	// context, so a handler that answers by sending never re-enters the
	// sender's request. Set it before the first SendSMS; nil drops such
	// messages after recording them.
	Inbound func(ctx context.Context, from, to, body, sid string)
	// Serves reports whether a number is one of this service's, whose
	// texts Inbound delivers. nil counts every simulated number as ours.
	Serves func(ctx context.Context, number string) bool
	// Report receives the delivery report of every text the simulator
	// accepted ("delivered"), as Twilio's status callback would, in its own
	// goroutine with a background context. It answers whether the text
	// was known: the sender records a text's sid only once SendSMS has
	// answered, so an unknown one is reported again, a few times over
	// about reportPatience, then dropped. nil sends no reports.
	Report func(ctx context.Context, sid string, status core.SMSStatus) (known bool)

	// Answered, when set, takes each call the simulator placed once it is
	// answered, as the callee's phone would, in its own goroutine; its
	// context ends when HangUp ends the call. nil leaves placed calls
	// queued until they are hung up.
	Answered func(ctx context.Context, c Call)

	// key signs the media URLs the simulator opens (SignMedia), as Twilio
	// signs its upgrade: only this process knows it.
	key [32]byte

	mu       sync.Mutex
	calls    map[string]context.CancelFunc // placed calls not hung up, by sid
	idle     sync.Cond                     // broadcast when inFlight drops to zero
	inFlight int                           // Inbound and Report calls under way
	// taken holds the numbers handed out; they are not reused while the
	// process lives, as a carrier rests a released number.
	taken map[string]bool
	// held is the numbers bought and not released, by sid.
	held map[string]string
	sent []Message // the latest keepSent, oldest first
}

var _ ports.Telephony = (*Sim)(nil)

// New returns an empty simulator.
func New() *Sim {
	s := &Sim{taken: map[string]bool{}, held: map[string]string{}, calls: map[string]context.CancelFunc{}}
	rand.Read(s.key[:]) // never fails since Go 1.24
	s.idle.L = &s.mu
	return s
}

// Name implements ports.Telephony.
func (s *Sim) Name() string { return "sim" }

// BuyNumber implements ports.Telephony with a random free number from the
// country's fictional range.
func (s *Sim) BuyNumber(_ context.Context, req ports.BuyNumber) (ports.BoughtNumber, error) {
	r, ok := ranges[req.CountryCode]
	if !ok {
		return ports.BoughtNumber{}, core.Invalid(core.NonFieldErrors, "the simulator has no numbers in %s", req.CountryCode)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// Probe from a random start, so that a crowded range still yields its
	// last free number rather than a spurious "none left".
	start := randomIndex(r.size)
	for i := range r.size {
		n := r.number((start + i) % r.size)
		if !s.taken[n] {
			s.taken[n] = true
			sid := newSID("PN")
			s.held[sid] = n
			return ports.BoughtNumber{
				Number:       n,
				SID:          sid,
				Capabilities: core.Capabilities{SMS: true, Voice: true},
			}, nil
		}
	}
	return ports.BoughtNumber{}, core.Invalid(core.NonFieldErrors, "the simulator has no numbers left in %s", req.CountryCode)
}

// ReleaseNumber implements ports.Telephony: the number is no longer held,
// and stays taken while the process lives. A sid the simulator does not
// hold (bought before a restart, or released already) counts as released,
// as Twilio's adapter counts a number Twilio no longer has.
func (s *Sim) ReleaseNumber(_ context.Context, sid string) error {
	if err := checkSID(sid); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.held, sid)
	return nil
}

// Held is the numbers bought and not released since the simulator started,
// by sid.
func (s *Sim) Held() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.held)
}

// SendSMS implements ports.Telephony. Every message is taken as sent and
// then reported delivered (Report); a message to a number of this service
// is also delivered to Inbound, and any other goes no further (no phone
// answers in the fictional ranges, and the simulator reaches no real one).
func (s *Sim) SendSMS(ctx context.Context, req ports.SendSMS) (ports.SentSMS, error) {
	if !core.IsE164(req.To) {
		return ports.SentSMS{}, core.Invalid(core.NonFieldErrors, "The 'To' number %s is not a valid phone number.", req.To)
	}
	m := Message{SID: newSID("SM"), From: req.From, To: req.To, Body: req.Body, Status: core.SMSSent}
	local := IsSimulated(req.To) && (s.Serves == nil || s.Serves(ctx, req.To))
	s.mu.Lock()
	s.sent = append(s.sent, m)
	if len(s.sent) > keepSent {
		s.sent = slices.Delete(s.sent, 0, len(s.sent)-keepSent)
	}
	deliver, report := local && s.Inbound != nil, s.Report != nil
	if deliver {
		s.inFlight++
	}
	if report {
		s.inFlight++
	}
	s.mu.Unlock()
	if deliver {
		// The receiving side is a message of its own, with its own id, as
		// between two numbers of a real provider.
		inboundSID := newSID("SM")
		go func() {
			defer s.delivered()
			s.Inbound(context.Background(), m.From, m.To, m.Body, inboundSID)
		}()
	}
	if report {
		go func() {
			defer s.delivered()
			s.reportDelivered(m.SID)
		}()
	}
	return ports.SentSMS{SID: m.SID, Status: m.Status}, nil
}

// reportPatience is about how long a report waits for its text to be known.
const reportPatience = 10 * time.Second

// reportDelivered tells Report that a text was delivered, again after
// 10 ms, 20 ms, … while the text is not known yet, for about
// reportPatience in all.
func (s *Sim) reportDelivered(sid string) {
	for wait := 10 * time.Millisecond; ; wait *= 2 {
		if s.Report(context.Background(), sid, core.SMSDelivered) || wait > reportPatience/2 {
			return
		}
		time.Sleep(wait)
	}
}

func (s *Sim) delivered() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inFlight--; s.inFlight == 0 {
		s.idle.Broadcast()
	}
}

// Wait returns once no Inbound or Report call is under way, including
// calls started by deliveries it waited for, so that tests can look at the outcome and
// shutdown can close what Inbound writes to.
func (s *Sim) Wait() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.inFlight > 0 {
		s.idle.Wait()
	}
}

// Sent returns the latest messages the simulator accepted, oldest first.
func (s *Sim) Sent() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.sent)
}

// PointCalls implements ports.Telephony: the simulator's calls are placed
// through the service itself (POST /webhooks/sim/call/).
func (s *Sim) PointCalls(_ context.Context, sid string, _ ports.VoiceWebhooks) error {
	return checkSID(sid)
}

// Call is a call the simulator placed, as its callee answers it.
type Call struct {
	SID, From, To string
	Answer        core.CallAnswer
}

// PlaceCall implements ports.Telephony: the call is queued, then answered
// by Answered (with a context that HangUp ends). The simulator reaches no
// real phone: a number of this service rings its identity (Answered's
// part), any other answers with nobody on the line.
func (s *Sim) PlaceCall(_ context.Context, req ports.PlaceCall) (ports.PlacedCall, error) {
	if !core.IsE164(req.To) {
		return ports.PlacedCall{}, core.Invalid(core.NonFieldErrors, "The 'To' number %s is not a valid phone number.", req.To)
	}
	c := Call{SID: newSID("CA"), From: req.From, To: req.To, Answer: req.Answer}
	ctx, cancel := context.WithCancel(context.Background())
	s.mu.Lock()
	s.calls[c.SID] = cancel
	answer := s.Answered != nil
	if answer {
		s.inFlight++
	}
	s.mu.Unlock()
	if answer {
		go func() {
			defer s.delivered()
			defer func() { _ = s.HangUp(ctx, c.SID) }() // the call ends with its answer
			s.Answered(ctx, c)
		}()
	}
	return ports.PlacedCall{SID: c.SID, Status: core.CallQueued}, nil
}

// HangUp implements ports.Telephony: the call's Answered context ends. A
// call the simulator does not know (ended, or placed before a restart)
// counts as hung up.
func (s *Sim) HangUp(_ context.Context, sid string) error {
	s.mu.Lock()
	cancel := s.calls[sid]
	delete(s.calls, sid)
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	return nil
}

// SignMedia is the signature the simulator puts on its upgrade to a media
// URL, as Twilio's X-Twilio-Signature: VerifyWebhook accepts it.
func (s *Sim) SignMedia(fullURL string) string {
	mac := hmac.New(sha256.New, s.key[:])
	mac.Write([]byte(fullURL))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// VerifyWebhook implements ports.Telephony. Only the simulator's own
// media upgrades are signed (SignMedia), with no parameters; its webhook
// is authenticated with a management key instead.
func (s *Sim) VerifyWebhook(fullURL string, params url.Values, signature string) bool {
	return len(params) == 0 && hmac.Equal([]byte(signature), []byte(s.SignMedia(fullURL)))
}

func checkSID(sid string) error {
	if sid == "" {
		return core.Invalid(core.NonFieldErrors, "a phone number sid is required")
	}
	return nil
}

// newSID makes an id shaped like Twilio's: a two-letter prefix, 32 hex digits.
func newSID(prefix string) string {
	var b [16]byte
	rand.Read(b[:]) // never fails since Go 1.24
	return prefix + hex.EncodeToString(b[:])
}

// randomIndex is uniform enough over [0, n): the modulo's bias is below n/2⁶⁴.
func randomIndex(n int) int {
	var b [8]byte
	rand.Read(b[:])
	return int(binary.BigEndian.Uint64(b[:]) % uint64(n))
}
