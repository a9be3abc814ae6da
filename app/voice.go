package app

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// DefaultCallMaxDuration bounds a call when CALLSIGN_CALL_MAX_DURATION is
// unset: four hours, as Twilio bounds one.
const DefaultCallMaxDuration = 4 * time.Hour

// DefaultActiveCalls bounds an account's calls in progress when
// CALLSIGN_QUOTA_ACTIVE_CALLS is unset.
const DefaultActiveCalls = 10

// AgentConnectTimeout bounds the dial of an agent's WebSocket.
const AgentConnectTimeout = 5 * time.Second

func voiceAAD(identityID string) []byte { return aad("voice_agents", "stream_secret", identityID) }

// openSecret reads an agent setting's sealed stream secret into StreamSecret.
func openSecret(cipher ports.Cipher, v core.VoiceAgent) (core.VoiceAgent, error) {
	if len(v.SealedStreamSecret) == 0 {
		return v, nil
	}
	secret, err := cipher.Open(v.SealedStreamSecret, voiceAAD(v.IdentityID))
	v.StreamSecret = string(secret)
	return v, err
}

// sealSecret gives v a new stream secret, sealed for the store.
func (s *Phone) sealSecret(v *core.VoiceAgent) error {
	secret, err := core.NewWebhookSecret(s.random)
	if err != nil {
		return err
	}
	if v.SealedStreamSecret, err = s.cipher.Seal([]byte(secret), voiceAAD(v.IdentityID)); err != nil {
		return err
	}
	v.StreamSecret = secret
	return nil
}

// RotateStreamSecret gives an identity's voice agent a new stream secret;
// the old one stops signing at once (an agent verifies one upgrade per call).
func (s *Phone) RotateStreamSecret(ctx context.Context, p core.Principal, identityID string) (core.VoiceAgent, error) {
	v, err := s.VoiceAgent(ctx, p, identityID)
	if err != nil {
		return v, err
	}
	if err := s.sealSecret(&v); err != nil {
		return v, err
	}
	v.UpdatedAt = s.now()
	return v, s.store.SaveVoiceAgent(ctx, v)
}

// checkStreamURL holds an agent's WebSocket to the outbound-destination
// policy, as a webhook's URL is held, on the stream_url field.
func checkStreamURL(ctx context.Context, hooks ports.WebhookSender, raw string) error {
	if raw == "" {
		return nil
	}
	if err := hooks.Check(ctx, core.ProbeURL(raw)); err != nil {
		return onField(err, "stream_url")
	}
	return nil
}

// PlaceInput is a call an identity asks to place.
type PlaceInput struct {
	core.PlacedCall
	Identity string // ?identity= or the body's, for a management key
}

// Place places a call from an identity's number (POST /api/calls/). It is
// a send: it needs can_send, counts toward sends_per_hour, and the call
// rules of the identity judge the number. The call is stored queued before
// the provider hears of it, so that its media token and status callbacks
// find it.
func (s *Calls) Place(ctx context.Context, p core.Principal, in PlaceInput) (core.Call, error) {
	if err := requireSend(p, nil); err != nil {
		return core.Call{}, err
	}
	identityID, err := p.Scope(in.Identity).Single("identity")
	if err != nil {
		return core.Call{}, err
	}
	// Another account's identity is not found, before its setting is judged.
	if _, err := s.identities.lookup(ctx, p.AccountID, identityID); err != nil {
		return core.Call{}, err
	}
	setting, err := s.numbers.VoiceAgent(ctx, p.AccountID, identityID)
	if isNotFound(err) {
		setting, err = core.VoiceAgent{Mode: core.VoiceRedirect}, nil
	}
	if err != nil {
		return core.Call{}, err
	}
	mode, target, err := core.ValidatePlacedCall(in.PlacedCall, setting)
	if err == nil {
		err = s.possibleNumber("to", in.To)
	}
	if err == nil && mode == core.VoiceStream {
		err = checkStreamURL(ctx, s.hooks, target)
	}
	if err != nil {
		return core.Call{}, err
	}
	if err := s.rules.checkRecipients(ctx, p.AccountID, identityID, core.RuleCall, map[string][]string{"to": {in.To}}); err != nil {
		return core.Call{}, err
	}
	if err := s.gate.allow(ctx, p.AccountID, core.ActPlaceCall); err != nil {
		return core.Call{}, err
	}
	active, err := s.store.ActiveCalls(ctx, p.AccountID)
	if err != nil {
		return core.Call{}, err
	}
	if err := core.ActiveCallsRoom(active, s.maxActive); err != nil {
		return core.Call{}, err
	}
	phone, err := s.numbers.PhoneOfIdentity(ctx, p.AccountID, identityID)
	if isNotFound(err) {
		return core.Call{}, core.NotFound("This identity has no phone number; provision one first.")
	}
	if err != nil {
		return core.Call{}, err
	}
	pending, err := core.RandomToken(s.random, 16)
	if err != nil {
		return core.Call{}, err
	}
	c := core.Call{AccountID: phone.AccountID, IdentityID: phone.IdentityID, PhoneID: phone.ID, PhoneNumber: phone.Number,
		Direction: core.Outgoing, FromNumber: phone.Number, ToNumber: in.To, Status: core.CallQueued, StartedAt: s.now(),
		DurationSeconds: -1, ProviderSID: "pending-" + pending, Mode: mode, AgentURL: target, Record: in.Record || setting.RecordCalls}
	answer, err := s.answer(&c, setting.Method)
	if err != nil {
		return core.Call{}, err
	}
	if c, _, err = s.store.SaveCall(ctx, c); err != nil {
		return core.Call{}, err
	}
	placed, err := s.telephony.PlaceCall(ctx, ports.PlaceCall{From: phone.Number, To: in.To, Answer: answer,
		StatusCallbackURL: s.publicURL + webhooksOf(s.telephony).CallStatus, TimeLimit: s.maxDuration})
	if err != nil {
		// The call is kept, failed: it was a send, and its record says why.
		if rerr := s.report(context.WithoutCancel(ctx), core.CallReport{ProviderSID: c.ProviderSID, Status: core.CallFailed,
			At: s.now(), DurationSeconds: 0}); rerr != nil {
			s.log.Error("voice: recording a call the provider refused failed", "call", c.ID, "err", rerr)
		}
		return core.Call{}, onField(err, "to")
	}
	// The provider may report on the call before its sid is recorded here:
	// such a report is dropped, and the next one moves the call.
	if err := s.store.SetCallProvider(ctx, c.ID, placed.SID); err != nil {
		return core.Call{}, err
	}
	c.ProviderSID = placed.SID
	s.wakeHangUps()
	return c, nil
}

// answer is what call c does once answered; a streamed call gets its
// one-time media token (its hash kept on c).
func (s *Calls) answer(c *core.Call, method string) (core.CallAnswer, error) {
	switch c.Mode {
	case core.VoiceStream:
		token, err := core.RandomToken(s.random, 24)
		if err != nil {
			return core.CallAnswer{}, err
		}
		c.MediaTokenHash = core.MediaTokenHash(token)
		return core.CallAnswer{StreamURL: core.MediaURL(s.publicURL, token), Greeting: core.Greeting(c.Record)}, nil
	case core.VoiceRedirect:
		if method == "" {
			method = "POST"
		}
		return core.CallAnswer{Redirect: c.AgentURL, Method: method}, nil
	}
	return core.CallAnswer{}, nil
}

// HangUp ends a call in progress (POST /api/calls/{id}/hangup/): asked
// twice, it answers the call both times; a call that has ended is a
// conflict. The provider's report then ends the record; the end reason is
// hangup_api.
func (s *Calls) HangUp(ctx context.Context, p core.Principal, id int64) (core.Call, error) {
	c, err := s.Get(ctx, p, id)
	if err != nil {
		return c, err
	}
	if c.Status.Ended() {
		return c, core.Conflict("This call has ended already.")
	}
	if err := s.store.NoteEndReason(ctx, c.ID, core.EndHangUpAPI); err != nil {
		return c, err
	}
	s.cancelStream(c.ID)
	if err := s.telephony.HangUp(ctx, c.ProviderSID); err != nil {
		return c, err
	}
	return s.Get(ctx, p, id)
}

// Recording is a call's recording, fenced like the call.
func (s *Calls) Recording(ctx context.Context, p core.Principal, id int64) ([]byte, error) {
	c, err := s.Get(ctx, p, id)
	if err != nil {
		return nil, err
	}
	return s.store.CallRecording(ctx, c.AccountID, c.ID)
}

// VerifyMedia checks the provider's signature of a media WebSocket's
// upgrade, over its full URL with no parameters.
func (s *Calls) VerifyMedia(fullURL, signature string) bool {
	return signature != "" && s.telephony.VerifyWebhook(fullURL, nil, signature)
}

// StreamTarget is what the media endpoint needs to bridge a call: the
// agent's WebSocket and secrets, whether to record, the parameters of
// the agent's start message, and when the call must end.
type StreamTarget struct {
	Call             core.Call
	AgentURL         string
	Secrets          []string
	Record           bool
	CustomParameters map[string]string
	Deadline         time.Time
}

// OpenStream claims a media token: the first use opens the call's stream,
// any other is NotFound.
func (s *Calls) OpenStream(ctx context.Context, token string) (StreamTarget, error) {
	c, err := s.store.ClaimMediaToken(ctx, core.MediaTokenHash(token))
	if err != nil {
		return StreamTarget{}, err
	}
	v, err := s.numbers.VoiceAgent(ctx, c.AccountID, c.IdentityID)
	if err != nil && !isNotFound(err) {
		return StreamTarget{}, err
	}
	if v, err = openSecret(s.cipher, v); err != nil {
		return StreamTarget{}, err
	}
	t := StreamTarget{Call: c, AgentURL: c.AgentURL, Record: c.Record, Deadline: c.StartedAt.Add(s.maxDuration),
		CustomParameters: map[string]string{"identity": c.IdentityID, "call": strconv.FormatInt(c.ID, 10), "from": c.FromNumber, "to": c.ToNumber,
			"direction": string(c.Direction)}}
	if v.StreamSecret != "" {
		t.Secrets = []string{v.StreamSecret}
	}
	return t, nil
}

// StreamConnected records that the agent answered the call's stream
// (call.started), and returns the context the bridge runs in: it ends at
// the call's deadline, or when the call is hung up through the API.
func (s *Calls) StreamConnected(ctx context.Context, t StreamTarget) (context.Context, context.CancelFunc, error) {
	if err := s.store.StreamConnected(ctx, t.Call.ID, s.now()); err != nil {
		return nil, nil, err
	}
	bridged, cancel := context.WithDeadline(ctx, t.Deadline)
	s.mu.Lock()
	s.streams[t.Call.ID] = cancel
	s.mu.Unlock()
	return bridged, func() {
		s.mu.Lock()
		delete(s.streams, t.Call.ID)
		s.mu.Unlock()
		cancel()
	}, nil
}

// cancelStream ends the bridge of a call on this instance, if it runs here.
func (s *Calls) cancelStream(id int64) {
	s.mu.Lock()
	cancel := s.streams[id]
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// StreamResult is how a call's bridge ended.
type StreamResult struct {
	Stream core.CallStream
	// Unreachable says the agent's WebSocket could not be dialled.
	Unreachable bool
	// DeadlinePassed says the call reached its maximum duration.
	DeadlinePassed bool
	// ProviderEnded says the provider's side ended (its stop, or its
	// socket closed): the call is over already.
	ProviderEnded bool
	Recording     []byte // nil when not recorded
}

// StreamEnded records how a call's bridge ended. When the agent's side
// ended it (or the deadline passed) the call is hung up at the provider,
// so the caller does not hear the fallback meant for an unreachable agent.
func (s *Calls) StreamEnded(ctx context.Context, t StreamTarget, r StreamResult) error {
	reason := core.EndCompleted
	switch {
	case r.Unreachable:
		reason = core.EndAgentUnreachable
	case r.DeadlinePassed:
		reason = core.EndMaxDuration
	}
	ctx = context.WithoutCancel(ctx)
	if !r.Stream.ConnectedAt.IsZero() {
		r.Stream.EndedAt = s.now()
	}
	if err := s.store.StreamEnded(ctx, t.Call.ID, r.Stream, reason, r.Recording); err != nil {
		return err
	}
	if r.Unreachable || r.ProviderEnded {
		return nil
	}
	if err := s.telephony.HangUp(ctx, t.Call.ProviderSID); err != nil {
		s.log.Warn("voice: hanging up a call whose stream ended failed", "call", t.Call.ID, "err", err)
	}
	return nil
}

// staleStream is how long after a call ended its bridge may still be
// storing its counts (it ends within a second or two of the call); one
// silent longer ran on an instance that stopped.
const staleStream = time.Minute

// RunStreamSweep, every minute until ctx ends, ends the bridges of calls
// that ended over staleStream ago and whose bridge never reported, so
// that their call.completed, held back for the bridge's counts, is
// written (with the counts known).
func (s *Calls) RunStreamSweep(ctx context.Context) {
	tick := time.NewTicker(time.Minute)
	defer tick.Stop()
	for {
		for {
			n, err := s.store.EndStaleStreams(ctx, s.now().Add(-staleStream))
			if err != nil && ctx.Err() == nil {
				s.log.Error("voice: ending stale streams failed", "err", err)
			}
			if n > 0 {
				s.log.Warn("voice: streams whose bridge never reported were ended", "calls", n)
			}
			if err != nil || n < 100 {
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// wakeHangUps tells RunSimulatedHangUps a call was placed.
func (s *Calls) wakeHangUps() {
	select {
	case s.placed <- struct{}{}:
	default:
	}
}

// SimulatedStream is what the simulator's caller sends on a streamed call
// (POST /webhooks/sim/call/ with Stream).
type SimulatedStream struct {
	Audio  []byte // μ-law; nil plays a 440 Hz tone
	Digits string
}

// MaxSimulatedDigits bounds the DTMF digits a simulated caller presses.
const MaxSimulatedDigits = 64

// SimulateStream is Simulate for a streamed call: the simulator calls the
// identity's number as a provider would, and its caller plays duration of
// audio and digits against our media endpoint, then hangs up. The call's
// record is answered as the voice agent says (stream mode is needed).
func (s *Calls) SimulateStream(ctx context.Context, p core.Principal, from, to string, duration time.Duration, in SimulatedStream) (core.Call, error) {
	if err := requireManagement(p); err != nil {
		return core.Call{}, err
	}
	if s.telephony.Name() != "sim" || s.player == nil {
		return core.Call{}, core.NotFound("The telephony simulator is not in use (CALLSIGN_TELEPHONY is not sim).")
	}
	var problems core.Problems
	if !core.IsE164(from) {
		problems.Add("From", "Enter a phone number in E.164 form.")
	}
	if duration < 0 || duration > MaxSimulatedCall {
		problems.Add("Duration", "Enter a whole number of seconds from 0 to %d.", int(MaxSimulatedCall/time.Second))
	}
	if len(in.Digits) > MaxSimulatedDigits || strings.Trim(in.Digits, "0123456789*#") != "" {
		problems.Add("Digits", "Enter up to %d of the digits 0-9, * and #.", MaxSimulatedDigits)
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
	v, err := s.numbers.VoiceAgent(ctx, phone.AccountID, phone.IdentityID)
	if isNotFound(err) || err == nil && (!v.Enabled || v.Mode != core.VoiceStream) {
		return core.Call{}, core.Invalid("Stream", "The identity's voice agent is not enabled in stream mode.")
	}
	if err != nil {
		return core.Call{}, err
	}
	sid, err := core.RandomToken(s.random, 16)
	if err != nil {
		return core.Call{}, err
	}
	sid = "CAsim" + sid
	c, answer, err := s.receive(ctx, InboundCall{SID: sid, From: from, To: to, Status: string(core.CallInProgress)})
	if err != nil {
		return core.Call{}, err
	}
	go s.playSimulated(sid, answer.StreamURL, ports.PlayMedia{CallSID: sid, Duration: duration, Audio: in.Audio, Digits: in.Digits})
	return c, nil
}

// playSimulated plays the simulator's caller against a media URL, then
// reports the call completed, as the provider's status callback would.
func (s *Calls) playSimulated(sid, mediaURL string, m ports.PlayMedia) {
	ctx := context.Background()
	started := s.now()
	if mediaURL != "" {
		if _, err := s.player.Play(ctx, mediaURL, m); err != nil {
			s.log.Warn("voice: the simulated caller's stream failed", "sid", sid, "err", err)
		}
	}
	if err := s.report(ctx, core.CallReport{ProviderSID: sid, Status: core.CallDone, At: s.now(),
		DurationSeconds: int(s.now().Sub(started).Round(time.Second) / time.Second)}); err != nil {
		s.log.Error("voice: ending a simulated call failed", "sid", sid, "err", err)
	}
}

// AnswerSimulated is the far end of a call the simulator placed: it
// answers at once; a number of this service rings its identity, which
// answers as its voice agent says. When both sides are streamed, the two
// agents hear each other; a streamed side with no streamed other side
// hears the simulator's caller (a tone). The call lasts until it is hung
// up (ctx), either streamed side ends, or the call's maximum duration
// passes. Both sides then end, completed.
func (s *Calls) AnswerSimulated(ctx context.Context, sid, from, to string, answer core.CallAnswer) {
	bg := context.WithoutCancel(ctx)
	// The call's sid is recorded once PlaceCall has answered, which may be
	// after this starts: the answer is reported again until it is known.
	for wait := 10 * time.Millisecond; wait < 10*time.Second; wait *= 2 {
		found, err := s.store.ReportCall(bg, core.CallReport{ProviderSID: sid, Status: core.CallInProgress, At: s.now(), DurationSeconds: -1})
		if err != nil {
			s.log.Error("voice: answering a simulated call failed", "sid", sid, "err", err)
		}
		if found || err != nil {
			break
		}
		time.Sleep(wait)
	}
	var callee core.CallAnswer
	var calleeSID string
	if _, err := s.numbers.PhoneByNumber(ctx, to); err == nil {
		token, err := core.RandomToken(s.random, 16)
		if err == nil {
			calleeSID = "CAsim" + token
			callee, err = s.Receive(bg, InboundCall{SID: calleeSID, From: from, To: to, Status: string(core.CallInProgress)})
		}
		if err != nil {
			s.log.Error("voice: ringing the simulated callee failed", "sid", sid, "err", err)
		}
	}
	if answer.StreamURL != "" && callee.StreamURL != "" {
		// Two agents of this service: each hears the other.
		if err := s.player.Connect(ctx, ports.MediaLeg{MediaURL: answer.StreamURL, CallSID: sid},
			ports.MediaLeg{MediaURL: callee.StreamURL, CallSID: calleeSID}); err != nil && ctx.Err() == nil {
			s.log.Warn("voice: the simulator could not connect the two sides", "sid", sid, "err", err)
		}
	} else {
		var wg sync.WaitGroup
		for _, side := range []struct{ sid, url string }{{sid, answer.StreamURL}, {calleeSID, callee.StreamURL}} {
			if side.sid == "" {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if side.url == "" {
					<-ctx.Done() // a redirected call, or one refused, lasts until hung up
				} else if _, err := s.player.Play(ctx, side.url, ports.PlayMedia{CallSID: side.sid, Duration: s.maxDuration}); err != nil && ctx.Err() == nil {
					s.log.Warn("voice: the simulated far end's stream failed", "sid", side.sid, "err", err)
				}
			}()
		}
		wg.Wait()
	}
	for _, id := range []string{sid, calleeSID} {
		if id == "" {
			continue
		}
		if err := s.report(bg, core.CallReport{ProviderSID: id, Status: core.CallDone, At: s.now(), DurationSeconds: -1}); err != nil {
			s.log.Error("voice: ending a simulated call failed", "sid", id, "err", err)
		}
	}
}
