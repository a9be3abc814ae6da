package ports

import (
	"context"
	"net/url"

	"github.com/callsign/callsign/core"
)

// Telephony is a phone provider: numbers, SMS and where calls go.
//
// Errors are core errors: KindUnavailable when the provider cannot be
// reached or fails on its side (timeouts, 5xx), KindInvalid when it rejects
// the request (an invalid destination, a country it has no numbers in),
// with the provider's reason as the message.
type Telephony interface {
	// Name is the provider's name as shown on phone numbers ("twilio", "sim").
	Name() string
	// BuyNumber finds an available local number in a country and buys it,
	// pointing its SMS webhook (and, when set, its voice URL) at us.
	BuyNumber(ctx context.Context, req BuyNumber) (BoughtNumber, error)
	// ReleaseNumber gives a number back to the provider.
	ReleaseNumber(ctx context.Context, sid string) error
	// SendSMS hands a message to the provider.
	SendSMS(ctx context.Context, req SendSMS) (SentSMS, error)
	// SetVoiceURL points a number's incoming calls at url ("" clears it).
	SetVoiceURL(ctx context.Context, sid, url, method string) error
	// VerifyWebhook checks a webhook's signature, computed by the provider
	// over the full public URL it called and the form parameters.
	VerifyWebhook(fullURL string, params url.Values, signature string) bool
}

// BuyNumber asks for a number.
type BuyNumber struct {
	CountryCode   string // ISO 3166-1 alpha-2
	SMSWebhookURL string
	VoiceURL      string // "" for none
	VoiceMethod   string // POST or GET
}

// BoughtNumber is a number the provider gave us.
type BoughtNumber struct {
	Number       string // E.164
	SID          string // the provider's id for it
	Capabilities core.Capabilities
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
