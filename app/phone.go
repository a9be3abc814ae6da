package app

import (
	"context"
	"errors"
	"strings"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// Phone provisions numbers and points live calls at voice agents (spec §2-§4).
type Phone struct{ *base }

// Webhook paths under the public URL, where the provider reports to us.
const (
	SMSWebhookPath    = "/webhooks/twilio/sms/"
	StatusWebhookPath = "/webhooks/twilio/status/"
)

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

// buy asks the provider for a number for identityID, with the voice agent
// the identity already has. A rejection names the country_code field.
func (s *Phone) buy(ctx context.Context, accountID, identityID, country string) (core.PhoneNumber, error) {
	req := s.buyRequest(ctx, accountID, identityID, country)
	bought, err := s.deps.Telephony.BuyNumber(ctx, req)
	if err != nil {
		return core.PhoneNumber{}, onField(err, "country_code")
	}
	return core.PhoneNumber{AccountID: accountID, IdentityID: identityID, Number: bought.Number, CountryCode: country,
		Capabilities: bought.Capabilities, Provider: s.deps.Telephony.Name(), ProviderSID: bought.SID, CreatedAt: s.now()}, nil
}

func (s *Phone) buyRequest(ctx context.Context, accountID, identityID, country string) ports.BuyNumber {
	req := ports.BuyNumber{CountryCode: country, SMSWebhookURL: s.deps.PublicURL + SMSWebhookPath}
	if v, err := s.deps.Store.VoiceAgent(ctx, accountID, identityID); err == nil && v.Enabled {
		req.VoiceURL, req.VoiceMethod = v.ResponseURL, v.Method
	}
	return req
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
func (s *Phone) release(ctx context.Context, p core.PhoneNumber) {
	if err := s.deps.Telephony.ReleaseNumber(context.WithoutCancel(ctx), p.ProviderSID); err != nil {
		s.deps.Log.Error("releasing an unused number failed; release it at the provider", "number", p.Number, "err", err)
	}
}

// Provision buys a number for an identity that has none. When the provider
// fails nothing is stored; when storing fails the number is released.
func (s *Phone) Provision(ctx context.Context, p core.Principal, identityID, country string) (core.Identity, error) {
	ident, err := (&Identities{s.base}).Get(ctx, p, identityID)
	if err != nil {
		return core.Identity{}, err
	}
	if country, err = normalizeCountry(country); err != nil {
		return core.Identity{}, err
	}
	if ident.Phone != "" {
		return core.Identity{}, core.Conflict("This identity already has a phone number.")
	}
	number, err := s.buy(ctx, ident.AccountID, ident.ID, country)
	if err != nil {
		return core.Identity{}, err
	}
	if _, err := s.deps.Store.CreatePhone(ctx, number); err != nil {
		s.release(ctx, number)
		if core.KindOf(err) == core.KindConflict {
			return core.Identity{}, core.Conflict("This identity already has a phone number.")
		}
		return core.Identity{}, err
	}
	ident.Phone = number.Number
	return ident, nil
}

// Phones lists the numbers in scope.
func (s *Phone) Phones(ctx context.Context, p core.Principal, requested string) ([]core.PhoneNumber, error) {
	return s.deps.Store.Phones(ctx, p.Scope(requested))
}

// Get shows one number in scope.
func (s *Phone) Get(ctx context.Context, p core.Principal, id int64) (core.PhoneNumber, error) {
	n, err := s.deps.Store.Phone(ctx, p.AccountID, id)
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
}

// VoiceAgent shows an identity's setting; one never saved reads as
// disabled, with no URL.
func (s *Phone) VoiceAgent(ctx context.Context, p core.Principal, identityID string) (core.VoiceAgent, error) {
	ident, err := (&Identities{s.base}).Get(ctx, p, identityID)
	if err != nil {
		return core.VoiceAgent{}, err
	}
	v, err := s.deps.Store.VoiceAgent(ctx, ident.AccountID, ident.ID)
	if isNotFound(err) {
		return core.VoiceAgent{IdentityID: ident.ID, AccountID: ident.AccountID, Method: "POST"}, nil
	}
	return v, err
}

// SetVoiceAgent saves an identity's setting and points its number's calls
// at it first: when the provider fails, nothing changes (503). replace (PUT)
// requires response_url; method defaults to POST and enabled to true.
func (s *Phone) SetVoiceAgent(ctx context.Context, p core.Principal, identityID string, in VoiceAgentInput, replace bool) (core.VoiceAgent, error) {
	v, err := s.VoiceAgent(ctx, p, identityID)
	if err != nil {
		return v, err
	}
	if replace {
		if in.ResponseURL == nil {
			return v, core.Invalid("response_url", "This field is required.")
		}
		v.Method, v.Enabled = "POST", true
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
	if err := core.ValidateVoiceAgent(v); err != nil {
		return v, err
	}
	number, err := s.deps.Store.PhoneOfIdentity(ctx, v.AccountID, v.IdentityID)
	switch {
	case err == nil:
		url := ""
		if v.Enabled {
			url = v.ResponseURL
		}
		if err := s.deps.Telephony.SetVoiceURL(ctx, number.ProviderSID, url, v.Method); err != nil {
			return v, onField(err, "response_url")
		}
	case !isNotFound(err):
		return v, err
	}
	v.UpdatedAt = s.now()
	return v, s.deps.Store.SaveVoiceAgent(ctx, v)
}
