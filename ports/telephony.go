package ports

import (
	"context"
	"net/url"
	"time"

	"github.com/callsign/callsign/core"
)

// Telephony is a phone provider: numbers, SMS and where calls go.
//
// Errors are core errors: KindUnavailable when the provider cannot be
// reached or fails on its side (timeouts, 5xx), KindInvalid when it rejects
// the request (an invalid destination, a country it has no numbers in),
// with the provider's reason as the message.
type Telephony interface {
	// Name is the provider's name as shown on phone numbers ("twilio", "telnyx", "sim").
	Name() string
	// BuyNumber finds an available local number in a country and buys it,
	// pointing its SMS webhook and its calls' webhooks at us.
	BuyNumber(ctx context.Context, req BuyNumber) (BoughtNumber, error)
	// ReleaseNumber gives a number back to the provider.
	ReleaseNumber(ctx context.Context, sid string) error
	// SendSMS hands a message to the provider.
	SendSMS(ctx context.Context, req SendSMS) (SentSMS, error)
	// PointCalls points a number's incoming calls at our webhooks.
	PointCalls(ctx context.Context, sid string, hooks VoiceWebhooks) error
	// PlaceCall asks the provider to call req.To from our req.From; once
	// answered the call does req.Answer.
	PlaceCall(ctx context.Context, req PlaceCall) (PlacedCall, error)
	// HangUp ends a call; one that has ended already counts as hung up.
	HangUp(ctx context.Context, sid string) error
	// VerifyWebhook checks a webhook's signature, computed by the provider
	// over the full public URL it called and the form parameters.
	VerifyWebhook(fullURL string, params url.Values, signature string) bool
}

// BuyNumber asks for a number.
type BuyNumber struct {
	CountryCode   string // ISO 3166-1 alpha-2
	SMSWebhookURL string
	Voice         VoiceWebhooks
}

// VoiceWebhooks are our addresses for a number's calls: the provider asks
// URL what to do with each incoming call, and tells StatusURL how the call
// went on (both POST).
type VoiceWebhooks struct {
	URL, StatusURL string
}

// BoughtNumber is a number the provider gave us.
type BoughtNumber struct {
	Number       string // E.164
	SID          string // the provider's id for it
	Capabilities core.Capabilities
}

// PlaceCall is a call to place.
type PlaceCall struct {
	From, To          string // E.164; From is our number
	Answer            core.CallAnswer
	StatusCallbackURL string
	// TimeLimit ends the call at the provider after it (CALLSIGN_CALL_MAX_DURATION).
	TimeLimit time.Duration
}

// PlacedCall is the provider's receipt for a call.
type PlacedCall struct {
	SID    string
	Status core.CallStatus
}

// SendSMS is a message to send.
type SendSMS struct {
	From              string // our number, E.164
	To                string // E.164
	Body              string
	StatusCallbackURL string
}

// SentSMS is the provider's receipt for a message.
type SentSMS struct {
	SID    string
	Status core.SMSStatus
}

// NumberPlan knows the world's numbering plans: which E.164 numbers can
// exist, by the lengths their country allows (+1415 is too short for the
// North American plan). It does not say a number is assigned: the
// simulator's fictional ranges (+44 7700 900xxx) pass.
type NumberPlan interface {
	// PossibleNumber reports whether an E.164 number has a length its
	// country code's plan allows.
	PossibleNumber(e164 string) bool
	// PossiblePrefix reports whether a prefix of E.164 numbers ("+44",
	// "+1415") can start a possible number: it begins with an assigned
	// country code, or with the start of one, and is not longer than the
	// plan allows.
	PossiblePrefix(prefix string) bool
}

// MediaPlayer plays a provider's side of a call's media stream against
// our media endpoint, as Twilio would (the simulator's): connected,
// start, Duration of 20 ms μ-law frames, Digits as dtmf, stop. It ends
// early when ctx ends or our side closes.
type MediaPlayer interface {
	Play(ctx context.Context, mediaURL string, p PlayMedia) (PlayedMedia, error)
	// Connect joins the media streams of two calls as one call: each
	// side hears what the other side's agent says, until ctx ends or
	// either side closes.
	Connect(ctx context.Context, a, b MediaLeg) error
}

// MediaLeg is one side of a call Connect joins.
type MediaLeg struct {
	MediaURL, CallSID string
}

// PlayMedia is what a simulated caller sends.
type PlayMedia struct {
	CallSID  string
	Duration time.Duration
	Audio    []byte // μ-law; nil plays a 440 Hz tone
	Digits   string
}

// PlayedMedia is what the simulated caller counted.
type PlayedMedia struct {
	FramesSent, FramesReceived int
}
