package app

import (
	"context"
	"errors"
	"strings"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// Phone provisions numbers and points live calls at voice agents (spec §2-§4).
type Phone struct {
	base
	store      ports.PhoneStore
	gate       gate // a number needs an active subscription
	identities *Identities
	numbers    *numbers
	telephony  ports.Telephony     // points numbers' calls at voice agents
	hooks      ports.WebhookSender // the outbound policy's check of a stream_url
	cipher     ports.Cipher        // seals stream secrets
}

// numbers buys numbers at the provider and gives back those we could not
// keep: for Phone.Provision, and for an identity made with a number.
type numbers struct {
	base
	store     ports.PhoneStore // which number an identity has, to release it
	telephony ports.Telephony
	publicURL string // where the provider's webhooks reach us
}

// WebhookPaths are where a provider reports to us, under the public URL.
type WebhookPaths struct {
	SMS, Status, Voice, CallStatus string
}

var (
	// TwilioWebhooks are Twilio's; the simulator calls none.
	TwilioWebhooks = WebhookPaths{SMS: "/webhooks/twilio/sms/", Status: "/webhooks/twilio/status/",
		Voice: "/webhooks/twilio/voice/", CallStatus: "/webhooks/twilio/call-status/"}
	// TelnyxWebhooks are Telnyx's: texts and their delivery reports come as
	// events to the one URL of the messaging profile.
	TelnyxWebhooks = WebhookPaths{SMS: "/webhooks/telnyx/messaging/", Status: "/webhooks/telnyx/messaging/",
		Voice: "/webhooks/telnyx/voice/", CallStatus: "/webhooks/telnyx/call-status/"}
)

// webhooksOf are the paths of a provider's webhooks, by its name.
func webhooksOf(t ports.Telephony) WebhookPaths {
	if t.Name() == "telnyx" {
		return TelnyxWebhooks
	}
	return TwilioWebhooks
}

// normalizeCountry checks an ISO 3166-1 alpha-2 code, upper-casing it.
func normalizeCountry(code string) (string, error) {
	code = strings.ToUpper(strings.TrimSpace(code))
	if code == "" {
		return "US", nil
	}
	if !core.IsCountryCode(code) {
		return "", core.Invalid("country_code", "Enter an ISO 3166-1 alpha-2 country code, such as US.")
	}
	return code, nil
}

// voiceWebhooks are where the provider tells us of calls: each call is
// recorded there, then sent on to the identity's voice agent.
func (n *numbers) voiceWebhooks() ports.VoiceWebhooks {
	paths := webhooksOf(n.telephony)
	return ports.VoiceWebhooks{URL: n.publicURL + paths.Voice, StatusURL: n.publicURL + paths.CallStatus}
}

// buy asks the provider for a number for identityID, with its texts and
// calls pointed at us. A rejection names the country_code field.
func (n *numbers) buy(ctx context.Context, accountID, identityID, country string) (core.PhoneNumber, error) {
	req := ports.BuyNumber{CountryCode: country, SMSWebhookURL: n.publicURL + webhooksOf(n.telephony).SMS, Voice: n.voiceWebhooks()}
	bought, err := n.telephony.BuyNumber(ctx, req)
	if err != nil {
		return core.PhoneNumber{}, onField(err, "country_code")
	}
	return core.PhoneNumber{AccountID: accountID, IdentityID: identityID, Number: bought.Number, CountryCode: country,
		Capabilities: bought.Capabilities, Provider: n.telephony.Name(), ProviderSID: bought.SID, CreatedAt: n.now()}, nil
}

// onField moves a provider's rejection onto the request field it concerns.
func onField(err error, field string) error {
	var e *core.Error
	if errors.As(err, &e) && e.Kind == core.KindInvalid {
		return core.Invalid(field, "%s", e.Message)
	}
	return err
}

// release gives back a number we could not keep; a failure is only logged:
// the caller's error is the one that matters.
func (n *numbers) release(ctx context.Context, p core.PhoneNumber) {
	if err := n.telephony.ReleaseNumber(context.WithoutCancel(ctx), p.ProviderSID); err != nil {
		n.log.Error("releasing an unused number failed; release it at the provider", "number", p.Number, "err", err)
	}
}

// releaseOf gives an identity's number back to the provider, before the
// identity's rows go: when the provider fails the caller stops and keeps
// everything, and may try again (a number the provider no longer has
// counts as released). It returns the number released, nil for none.
func (n *numbers) releaseOf(ctx context.Context, ident core.Identity) (*core.PhoneNumber, error) {
	p, err := n.store.PhoneOfIdentity(ctx, ident.AccountID, ident.ID)
	if isNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if err := n.telephony.ReleaseNumber(ctx, p.ProviderSID); err != nil {
		return nil, err
	}
	return &p, nil
}

// Provision buys a number for an identity that has none. When the provider
// fails nothing is stored; when storing fails the number is released.
func (s *Phone) Provision(ctx context.Context, p core.Principal, identityID, country string) (core.Identity, error) {
	ident, err := s.identities.Get(ctx, p, identityID)
	if err != nil {
		return core.Identity{}, err
	}
	if !p.MayProvision() {
		return core.Identity{}, core.Forbidden("Buying a phone number needs a management key, or an identity key created with can_provision: true.")
	}
	if country, err = normalizeCountry(country); err != nil {
		return core.Identity{}, err
	}
	if err := s.gate.allow(ctx, p.AccountID, core.ActBuyNumber); err != nil {
		return core.Identity{}, err
	}
	if ident.Phone != "" {
		return core.Identity{}, core.Conflict("This identity already has a phone number.")
	}
	number, err := s.numbers.buy(ctx, ident.AccountID, ident.ID, country)
	if err != nil {
		return core.Identity{}, err
	}
	if _, err := s.store.CreatePhone(ctx, number); err != nil {
		s.numbers.release(ctx, number)
		if core.KindOf(err) == core.KindConflict {
			return core.Identity{}, core.Conflict("This identity already has a phone number.")
		}
		return core.Identity{}, err
	}
	ident.Phone, ident.UpdatedAt = number.Number, number.CreatedAt
	return ident, nil
}

// Phones lists a page of the numbers in scope.
func (s *Phone) Phones(ctx context.Context, p core.Principal, requested string, page ports.Page) ([]core.PhoneNumber, int, error) {
	return s.store.Phones(ctx, p.Scope(requested), page)
}

// Get shows one number in scope.
func (s *Phone) Get(ctx context.Context, p core.Principal, id int64) (core.PhoneNumber, error) {
	n, err := s.store.Phone(ctx, p.AccountID, id)
	if err != nil {
		return n, err
	}
	if !p.Scope("").Allows(n.AccountID, n.IdentityID) {
		return core.PhoneNumber{}, core.NotFound("Phone number not found.")
	}
	return n, nil
}

// VoiceAgentInput carries the fields of a voice-agent write; nil means absent.
type VoiceAgentInput struct {
	ResponseURL *string
	Method      *string
	Enabled     *bool
	Mode        *string
	StreamURL   *string
	RecordCalls *bool
}

// VoiceAgent shows an identity's setting, with its stream secret; one
// never saved reads as disabled redirect, with no URL and no secret yet.
func (s *Phone) VoiceAgent(ctx context.Context, p core.Principal, identityID string) (core.VoiceAgent, error) {
	ident, err := s.identities.Get(ctx, p, identityID)
	if err != nil {
		return core.VoiceAgent{}, err
	}
	v, err := s.store.VoiceAgent(ctx, ident.AccountID, ident.ID)
	if isNotFound(err) {
		return core.VoiceAgent{IdentityID: ident.ID, AccountID: ident.AccountID, Method: "POST", Mode: core.VoiceRedirect}, nil
	}
	if err != nil {
		return v, err
	}
	return openSecret(s.cipher, v)
}

// SetVoiceAgent saves an identity's setting, pointing its number's calls
// at our webhook first: when the provider fails, nothing changes (503).
// replace (PUT) requires response_url, or stream_url in stream mode;
// method defaults to POST, mode to redirect and enabled to true. The
// first save makes the stream secret; stream_url is held to the outbound
// policy.
func (s *Phone) SetVoiceAgent(ctx context.Context, p core.Principal, identityID string, in VoiceAgentInput, replace bool) (core.VoiceAgent, error) {
	v, err := s.VoiceAgent(ctx, p, identityID)
	if err != nil {
		return v, err
	}
	if replace {
		streamed := in.Mode != nil && core.VoiceMode(strings.TrimSpace(*in.Mode)) == core.VoiceStream
		switch {
		case !streamed && in.ResponseURL == nil:
			return v, core.Invalid("response_url", "This field is required.")
		case streamed && in.StreamURL == nil:
			return v, core.Invalid("stream_url", "This field is required in stream mode.")
		}
		v.Method, v.Enabled, v.Mode, v.RecordCalls = "POST", true, core.VoiceRedirect, false
		v.ResponseURL, v.StreamURL = "", ""
	}
	if in.ResponseURL != nil {
		v.ResponseURL = strings.TrimSpace(*in.ResponseURL)
	}
	if in.Method != nil {
		v.Method = strings.ToUpper(strings.TrimSpace(*in.Method))
	}
	if in.Enabled != nil {
		v.Enabled = *in.Enabled
	}
	if in.Mode != nil {
		v.Mode = core.VoiceMode(strings.TrimSpace(*in.Mode))
	}
	if in.StreamURL != nil {
		v.StreamURL = strings.TrimSpace(*in.StreamURL)
	}
	if in.RecordCalls != nil {
		v.RecordCalls = *in.RecordCalls
	}
	if err := core.ValidateVoiceAgent(v); err != nil {
		return v, err
	}
	if err := checkStreamURL(ctx, s.hooks, v.StreamURL); err != nil {
		return v, err
	}
	if v.StreamSecret == "" {
		if err := s.sealSecret(&v); err != nil {
			return v, err
		}
	}
	number, err := s.store.PhoneOfIdentity(ctx, v.AccountID, v.IdentityID)
	switch {
	case err == nil:
		// Calls reach the agent through our webhook, which reads this
		// setting at each call; pointing the number at it again moves a
		// number bought before call records (pointed at the agent itself).
		if err := s.telephony.PointCalls(ctx, number.ProviderSID, s.numbers.voiceWebhooks()); err != nil {
			return v, onField(err, "response_url")
		}
	case !isNotFound(err):
		return v, err
	}
	v.UpdatedAt = s.now()
	return v, s.store.SaveVoiceAgent(ctx, v)
}
