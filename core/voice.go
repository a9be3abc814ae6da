package core

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// VoiceMode is how a call reaches an identity's voice agent.
type VoiceMode string

const (
	// VoiceRedirect hands the call to the agent's response_url, which
	// answers in TwiML itself.
	VoiceRedirect VoiceMode = "redirect"
	// VoiceStream relays the call's live audio between the provider and
	// the agent's WebSocket (stream_url), in Twilio's Media Streams format.
	VoiceStream VoiceMode = "stream"
)

// EndReason says why a call ended, as the call record shows it.
type EndReason string

const (
	EndCompleted        EndReason = "completed"         // a party hung up, or the stream ended
	EndHangUpAPI        EndReason = "hangup_api"        // POST /api/calls/{id}/hangup/
	EndMaxDuration      EndReason = "max_duration"      // CALLSIGN_CALL_MAX_DURATION passed
	EndAgentUnreachable EndReason = "agent_unreachable" // the agent's WebSocket could not be dialled
	EndProvider         EndReason = "provider"          // the provider ended it (busy, no answer, failed)
)

// CallStream is what the bridge between the provider's and the agent's
// WebSockets counted, once the agent was connected.
type CallStream struct {
	ConnectedAt      time.Time
	EndedAt          time.Time // zero while the bridge runs
	FramesFromCaller int64
	FramesToCaller   int64
	FramesDropped    int64
	DTMF             int64
}

// StreamSecretPrefix marks a voice agent's stream secret: a Standard
// Webhooks secret, as a webhook endpoint's (NewWebhookSecret).
const StreamSecretPrefix = webhookSecretPrefix

// validWSURL reports whether raw is an absolute ws or wss URL without
// credentials, of at most 2,048 characters.
func validWSURL(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && (u.Scheme == "ws" || u.Scheme == "wss") && u.Host != "" && u.User == nil && len(raw) <= 2048
}

// validHTTPURL reports whether raw is an absolute http or https URL of at
// most 2,048 characters.
func validHTTPURL(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && len(raw) <= 2048
}

// ProbeURL is the http(s) form of a ws(s) URL, for the outbound policy's
// check of its host (which speaks http and https).
func ProbeURL(wsURL string) string {
	if rest, ok := strings.CutPrefix(wsURL, "ws://"); ok {
		return "http://" + rest
	}
	if rest, ok := strings.CutPrefix(wsURL, "wss://"); ok {
		return "https://" + rest
	}
	return wsURL
}

// ValidateVoiceAgent checks a configuration before it is saved: an enabled
// agent needs the URL its mode uses.
func ValidateVoiceAgent(v VoiceAgent) error {
	var p Problems
	if v.ResponseURL != "" && !validHTTPURL(v.ResponseURL) {
		p.Add("response_url", "Enter an absolute http or https URL.")
	}
	if v.StreamURL != "" && !validWSURL(v.StreamURL) {
		p.Add("stream_url", "Enter an absolute ws or wss URL without credentials.")
	}
	switch v.Mode {
	case VoiceRedirect:
		if v.Enabled && v.ResponseURL == "" {
			p.Add("response_url", "A response_url is required to enable the voice agent.")
		}
	case VoiceStream:
		if v.Enabled && v.StreamURL == "" {
			p.Add("stream_url", "A stream_url is required to enable the voice agent in stream mode.")
		}
	default:
		p.Add("mode", "\"%s\" is not a valid choice; use redirect or stream.", v.Mode)
	}
	if v.Method != "POST" && v.Method != "GET" {
		p.Add("method", "\"%s\" is not a valid choice; use POST or GET.", v.Method)
	}
	return p.Err()
}

// CallAnswer is what a call does once answered: go to the agent's
// response_url (Redirect), or connect our media endpoint (StreamURL) after
// a short spoken Greeting; with neither it is refused.
type CallAnswer struct {
	Redirect, Method string
	StreamURL        string
	Greeting         string
}

// Spoken prompts of a streamed call: the greeting (which announces a
// recording), and what the caller hears when the agent cannot be reached
// (the provider goes on past <Connect> only when the stream failed or
// ended; a call whose stream ended normally is hung up first).
const (
	GreetingConnecting = "Connecting you now."
	GreetingRecorded   = "This call is recorded. Connecting you now."
	AgentUnreachable   = "Sorry, the agent cannot be reached. Please try again later."
)

// Greeting is the prompt a streamed call starts with.
func Greeting(recorded bool) string {
	if recorded {
		return GreetingRecorded
	}
	return GreetingConnecting
}

// TwiML is the answer in Twilio's markup, which Telnyx's TeXML shares.
func (a CallAnswer) TwiML() []byte {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><Response>`)
	text := func(s string) { _ = xml.EscapeText(&b, []byte(s)) } // a strings.Builder takes every write
	switch {
	case a.StreamURL != "":
		if a.Greeting != "" {
			b.WriteString(`<Say>`)
			text(a.Greeting)
			b.WriteString(`</Say>`)
		}
		b.WriteString(`<Connect><Stream url="`)
		text(a.StreamURL)
		b.WriteString(`"/></Connect><Say>`)
		text(AgentUnreachable)
		b.WriteString(`</Say>`)
	case a.Redirect != "":
		b.WriteString(`<Redirect method="` + a.Method + `">`)
		text(a.Redirect)
		b.WriteString(`</Redirect>`)
	default:
		b.WriteString(`<Reject/>`)
	}
	b.WriteString(`</Response>`)
	return []byte(b.String())
}

// MediaTokenHash is how a media URL's one-time token is kept: its
// SHA-256, so that the stored form opens no stream.
func MediaTokenHash(token string) string {
	sum := sha256.Sum256([]byte("callsign-media:" + token))
	return hex.EncodeToString(sum[:])
}

// MediaURL is our media endpoint for a token under the public base URL:
// wss for an https base, ws for http.
func MediaURL(baseURL, token string) string {
	base := strings.TrimSuffix(baseURL, "/")
	if rest, ok := strings.CutPrefix(base, "https://"); ok {
		base = "wss://" + rest
	} else if rest, ok := strings.CutPrefix(base, "http://"); ok {
		base = "ws://" + rest
	}
	return base + "/media/" + token + "/"
}

// PlacedCall is a call an identity asks to place (POST /api/calls/).
type PlacedCall struct {
	To          string
	Mode        VoiceMode // "" takes the identity's setting
	StreamURL   string
	ResponseURL string
	Record      bool
}

// ValidatePlacedCall checks a call to place, given the agent setting it
// falls back on, and returns the answer's mode and URL.
func ValidatePlacedCall(c PlacedCall, setting VoiceAgent) (VoiceMode, string, error) {
	var p Problems
	if !IsE164(c.To) {
		p.Add("to", E164Hint)
	}
	if c.StreamURL != "" && !validWSURL(c.StreamURL) {
		p.Add("stream_url", "Enter an absolute ws or wss URL without credentials.")
	}
	if c.ResponseURL != "" && !validHTTPURL(c.ResponseURL) {
		p.Add("response_url", "Enter an absolute http or https URL.")
	}
	mode := c.Mode
	if mode == "" {
		mode = setting.Mode
		if c.StreamURL != "" {
			mode = VoiceStream
		} else if c.ResponseURL != "" {
			mode = VoiceRedirect
		}
	}
	var target string
	switch mode {
	case VoiceStream:
		if target = c.StreamURL; target == "" {
			target = setting.StreamURL
		}
		if target == "" {
			p.Add("stream_url", "A stream_url is required: give one, or set it in the identity's voice-agent setting.")
		}
	case VoiceRedirect:
		if target = c.ResponseURL; target == "" {
			target = setting.ResponseURL
		}
		if target == "" {
			p.Add("response_url", "A response_url is required: give one, or set it in the identity's voice-agent setting.")
		}
	default:
		p.Add("mode", "\"%s\" is not a valid choice; use redirect or stream.", mode)
	}
	return mode, target, p.Err()
}

// ActiveCallsRoom says whether an account with active calls in progress
// may start one more under limit (0: unlimited); over it, 429 with a
// minute's wait, as calls end on their own.
func ActiveCallsRoom(active, limit int64) error {
	if limit <= 0 || active < limit {
		return nil
	}
	return &Error{Kind: KindRateLimited, Quota: QuotaActiveCalls, RetryAfterSeconds: 60,
		Message: fmt.Sprintf("Quota active_calls reached: %d of %d calls in progress. Try again when one has ended.", active, limit)}
}

// QuotaActiveCalls bounds an account's calls in progress
// (CALLSIGN_QUOTA_ACTIVE_CALLS). Calls end on their own, so it is checked
// against a count, not among the stored Quotas.
const QuotaActiveCalls Quota = "active_calls"

// CallStartedEvent is call.started: the agent is connected to the call.
func CallStartedEvent(c Call) NewEvent {
	return NewEvent{AccountID: c.AccountID, IdentityID: c.IdentityID, Type: CallStarted, Subject: c}
}

// EndReasonOf is why a call ended when a provider's report ended it and
// nothing of ours had said why: completed, or provider for a call that
// never connected (busy, no answer, failed, canceled).
func EndReasonOf(c Call) EndReason {
	if c.EndReason != "" {
		return c.EndReason
	}
	if c.Status == CallDone {
		return EndCompleted
	}
	return EndProvider
}
