package app

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// Calls keeps the records of calls to identities' numbers: told by the
// provider's voice webhooks, or placed by the simulator.
type Calls struct {
	base
	store      ports.CallStore
	numbers    ports.PhoneStore // whose number a call came to, and its voice agent
	telephony  ports.Telephony
	identities *Identities
	gate       gate
	rules      *Rules
	hooks      ports.WebhookSender // the outbound policy's check of an agent's WebSocket
	cipher     ports.Cipher        // opens agents' stream secrets
	publicURL  string
	// maxActive bounds an account's calls in progress (0: unlimited);
	// maxDuration bounds a call.
	maxActive   int64
	maxDuration time.Duration
	// placed wakes RunSimulatedHangUps when the simulator placed a call.
	placed chan struct{}
	// player plays the simulator's side of streamed calls; nil without
	// the simulator.
	player ports.MediaPlayer

	mu      sync.Mutex
	streams map[int64]context.CancelFunc // the bridges running here, by call
}

// InboundCall is a call a provider hands us (Twilio's voice webhook).
type InboundCall struct {
	SID, From, To string
	Status        string // the provider's word; "" reads as ringing
}

// Receive records a call to one of our numbers (call.received; the same
// SID twice is one call) and answers it as the identity's enabled voice
// agent says: redirected to its response_url, or streamed to its
// stream_url through our media endpoint. A call to a number we do not own,
// or to an identity with no enabled agent, is refused (a number we do not
// own is logged).
func (s *Calls) Receive(ctx context.Context, in InboundCall) (core.CallAnswer, error) {
	_, answer, err := s.receive(ctx, in)
	return answer, err
}

// receive is Receive, with the call stored (zero when none was).
func (s *Calls) receive(ctx context.Context, in InboundCall) (core.Call, core.CallAnswer, error) {
	status := core.CallRinging
	if in.Status != "" {
		var ok bool
		if status, ok = core.ParseCallStatus(in.Status); !ok {
			return core.Call{}, core.CallAnswer{}, core.Invalid("CallStatus", "%q is not a call status.", in.Status)
		}
	}
	if in.SID == "" {
		return core.Call{}, core.CallAnswer{}, core.Invalid("CallSid", "This field is required.")
	}
	phone, err := s.numbers.PhoneByNumber(ctx, in.To)
	if isNotFound(err) {
		s.log.Warn("voice: a call to a number we do not own was refused", "to", in.To, "sid", in.SID)
		return core.Call{}, core.CallAnswer{}, nil
	}
	if err != nil {
		return core.Call{}, core.CallAnswer{}, err
	}
	v, err := s.numbers.VoiceAgent(ctx, phone.AccountID, phone.IdentityID)
	if err != nil && !isNotFound(err) {
		return core.Call{}, core.CallAnswer{}, err
	}
	c := core.Call{AccountID: phone.AccountID, IdentityID: phone.IdentityID, PhoneID: phone.ID, PhoneNumber: phone.Number,
		Direction: core.Incoming, FromNumber: in.From, ToNumber: phone.Number, Status: status, StartedAt: s.now(),
		DurationSeconds: -1, ProviderSID: in.SID}
	if v.Enabled {
		c.Mode, c.AgentURL, c.Record = v.Mode, v.ResponseURL, v.RecordCalls
		if v.Mode == core.VoiceStream {
			c.AgentURL = v.StreamURL
		}
	}
	answer, err := s.answer(&c, v.Method)
	if err != nil {
		return core.Call{}, core.CallAnswer{}, err
	}
	stored, created, err := s.store.SaveCall(ctx, c)
	if err != nil {
		return core.Call{}, core.CallAnswer{}, err
	}
	if !created && stored.Mode == core.VoiceStream {
		// The provider asked twice: the first answer's token stands, and
		// this one's, never stored, would open nothing.
		return stored, core.CallAnswer{}, nil
	}
	return stored, answer, nil
}

// StatusReport records a provider's report on a call (Twilio's status
// callback: CallSid, CallStatus, CallDuration in seconds).
func (s *Calls) StatusReport(ctx context.Context, sid, status, duration string) error {
	st, ok := core.ParseCallStatus(status)
	if sid == "" || !ok {
		return core.Invalid(core.NonFieldErrors, "CallSid and a known CallStatus are required.")
	}
	seconds := -1
	if n, err := strconv.Atoi(duration); err == nil && n >= 0 {
		seconds = n
	}
	return s.report(ctx, core.CallReport{ProviderSID: sid, Status: st, At: s.now(), DurationSeconds: seconds})
}

// report is the one way a call moves, for the provider's reports and the
// simulator's hang-ups alike.
func (s *Calls) report(ctx context.Context, r core.CallReport) error {
	found, err := s.store.ReportCall(ctx, r)
	if err == nil && !found {
		s.log.Warn("voice: a status report for an unknown call was dropped", "sid", r.ProviderSID, "status", r.Status)
	}
	return err
}

// MaxSimulatedCall bounds a simulated call's Duration: four hours, as
// Twilio bounds a call.
const MaxSimulatedCall = 4 * time.Hour

// Simulate places a call through the simulator, for trying call records
// without a provider: it needs a management key, the simulator and a
// number of the caller's own account. The call is in progress at once and
// ends, completed, after duration: the hang-up time is stored with the
// call, so a restart in between still ends it (RunSimulatedHangUps).
func (s *Calls) Simulate(ctx context.Context, p core.Principal, from, to string, duration time.Duration) (core.Call, error) {
	if err := requireManagement(p); err != nil {
		return core.Call{}, err
	}
	if s.telephony.Name() != "sim" {
		return core.Call{}, core.NotFound("The telephony simulator is not in use (CALLSIGN_TELEPHONY is not sim).")
	}
	var problems core.Problems
	if !core.IsE164(from) {
		problems.Add("From", "Enter a phone number in E.164 form.")
	} else {
		problems.Merge(s.possibleNumber("From", from))
	}
	if duration < 0 || duration > MaxSimulatedCall {
		problems.Add("Duration", "Enter a whole number of seconds from 0 to %d.", int(MaxSimulatedCall/time.Second))
	}
	if err := problems.Err(); err != nil {
		return core.Call{}, err
	}
	phone, err := s.numbers.PhoneByNumber(ctx, to)
	if isNotFound(err) || err == nil && phone.AccountID != p.AccountID {
		return core.Call{}, core.NotFound("No number of this account is %q.", to)
	}
	if err != nil {
		return core.Call{}, err
	}
	sid, err := core.RandomToken(s.random, 16)
	if err != nil {
		return core.Call{}, err
	}
	now := s.now()
	c, _, err := s.store.SaveCall(ctx, core.Call{AccountID: phone.AccountID, IdentityID: phone.IdentityID, PhoneID: phone.ID,
		PhoneNumber: phone.Number, Direction: core.Incoming, FromNumber: from, ToNumber: phone.Number, Status: core.CallInProgress,
		StartedAt: now, DurationSeconds: -1, ProviderSID: "CAsim" + sid, HangUpAt: now.Add(duration)})
	if err == nil {
		s.wakeHangUps()
	}
	return c, err
}

// RunSimulatedHangUps ends the simulator's calls when they are due, until
// ctx ends, through the same report as a provider's status callback:
// completed, at the time it was due, with the duration asked for. A call
// due while no instance ran ends when one starts again, with that same
// end time.
func (s *Calls) RunSimulatedHangUps(ctx context.Context) {
	for {
		due, next, err := s.store.SimulatedHangUps(ctx, s.now())
		for _, c := range due {
			if err == nil {
				err = s.report(ctx, core.CallReport{ProviderSID: c.ProviderSID, Status: core.CallDone, At: c.HangUpAt,
					DurationSeconds: int(c.HangUpAt.Sub(c.StartedAt) / time.Second)})
			}
		}
		wait := time.Minute // a call placed on another instance sharing the database
		switch {
		case err != nil:
			if ctx.Err() == nil {
				s.log.Error("voice: ending simulated calls failed", "err", err)
			}
			wait = time.Second
		case len(due) > 0:
			wait = 0 // there may be more
		case !next.IsZero():
			wait = min(wait, next.Sub(s.now()))
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		case <-s.placed:
			timer.Stop()
		}
	}
}

// List lists a page of the calls in scope, newest first; after keeps
// calls started after it.
func (s *Calls) List(ctx context.Context, p core.Principal, requested string, after *time.Time, page ports.Page) ([]core.Call, int, error) {
	return s.store.Calls(ctx, ports.CallFilter{Scope: p.Scope(requested), StartedAfter: after, Page: page})
}

// Get shows one call in scope.
func (s *Calls) Get(ctx context.Context, p core.Principal, id int64) (core.Call, error) {
	c, err := s.store.Call(ctx, p.AccountID, id)
	if err != nil {
		return c, err
	}
	if !p.Scope("").Allows(c.AccountID, c.IdentityID) {
		return core.Call{}, core.NotFound("Call not found.")
	}
	return c, nil
}
