// Package twilio implements ports.Telephony with Twilio's REST API.
//
// It imports only twilio-go's client and 2010 API packages: the root twilio
// package wires every Twilio product and costs a minute of compile time.
package twilio

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	twclient "github.com/twilio/twilio-go/client"
	twapi "github.com/twilio/twilio-go/rest/api/v2010"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// Config is what the adapter needs to reach Twilio.
type Config struct {
	AccountSID string
	AuthToken  string
	// HTTPClient carries every call's deadline, since twilio-go takes no
	// context. nil means twilio-go's default: a 10 s timeout, no redirects.
	HTTPClient *http.Client
	// APIBaseURL replaces https://api.twilio.com; "" keeps it. Tests point
	// it at a local fake.
	APIBaseURL string
}

// Twilio is a ports.Telephony backed by a Twilio account.
type Twilio struct {
	api        *twapi.ApiService
	accountSID string
	authToken  string // the key of webhook signatures
}

var _ ports.Telephony = (*Twilio)(nil)

// New builds the adapter. It makes no request: a bad account shows on first use.
func New(cfg Config) *Twilio {
	cl := &twclient.Client{
		Credentials: twclient.NewCredentials(cfg.AccountSID, cfg.AuthToken),
		HTTPClient:  cfg.HTTPClient,
	}
	cl.SetAccountSid(cfg.AccountSID)
	var bc twclient.BaseClient = cl
	if cfg.APIBaseURL != "" {
		bc = &rebased{Client: cl, base: strings.TrimSuffix(cfg.APIBaseURL, "/")}
	}
	return &Twilio{
		api:        twapi.NewApiServiceWithClient(bc),
		accountSID: cfg.AccountSID,
		authToken:  cfg.AuthToken,
	}
}

// rebased sends twilio-go's requests to another server: twilio-go has the
// API's address built in and no option to change it.
type rebased struct {
	*twclient.Client
	base string // scheme://host[:port], no trailing slash
}

func (c *rebased) SendRequest(method, rawURL string, data url.Values, headers map[string]any, body ...byte) (*http.Response, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	return c.Client.SendRequest(method, c.base+u.RequestURI(), data, headers, body...)
}

// Check asks Twilio for the account, which proves the credentials work
// (`callsign doctor`); it changes nothing.
func (t *Twilio) Check(ctx context.Context) error {
	if err := checkSID(ctx, t.accountSID); err != nil {
		return err
	}
	acct, err := t.api.FetchAccount(t.accountSID)
	if err != nil {
		return fail(err)
	}
	if status := deref(acct.Status); status != "active" {
		return core.Unavailable("the Twilio account is %s, not active", status)
	}
	return nil
}

// Name implements ports.Telephony.
func (t *Twilio) Name() string { return "twilio" }

// BuyNumber implements ports.Telephony: it takes the first SMS-capable local
// number Twilio offers and buys it with our webhooks already set.
func (t *Twilio) BuyNumber(ctx context.Context, req ports.BuyNumber) (ports.BoughtNumber, error) {
	if !core.IsCountryCode(req.CountryCode) { // twilio-go pastes it into the path
		return ports.BoughtNumber{}, core.Invalid(core.NonFieldErrors, "%q is not a country code", req.CountryCode)
	}
	if err := live(ctx); err != nil {
		return ports.BoughtNumber{}, err
	}
	found, err := t.api.ListAvailablePhoneNumberLocal(req.CountryCode,
		(&twapi.ListAvailablePhoneNumberLocalParams{}).SetSmsEnabled(true).SetLimit(1))
	if err != nil {
		var e *twclient.TwilioRestError
		if errors.As(err, &e) && e.Status == http.StatusNotFound {
			return ports.BoughtNumber{}, core.Invalid(core.NonFieldErrors, "Twilio has no numbers in %s: %s", req.CountryCode, reason(e))
		}
		return ports.BoughtNumber{}, fail(err)
	}
	if len(found) == 0 || found[0].PhoneNumber == nil {
		return ports.BoughtNumber{}, core.Invalid(core.NonFieldErrors, "no local numbers available in %s", req.CountryCode)
	}
	// The search took a round trip: do not buy for a caller who has gone.
	if err := live(ctx); err != nil {
		return ports.BoughtNumber{}, err
	}
	params := (&twapi.CreateIncomingPhoneNumberParams{}).
		SetPhoneNumber(*found[0].PhoneNumber).
		SetSmsUrl(req.SMSWebhookURL).
		SetSmsMethod(http.MethodPost)
	if req.Voice.URL != "" {
		params.SetVoiceUrl(req.Voice.URL).SetVoiceMethod(http.MethodPost).
			SetStatusCallback(req.Voice.StatusURL).SetStatusCallbackMethod(http.MethodPost)
	}
	pn, err := t.api.CreateIncomingPhoneNumber(params)
	if err != nil {
		return ports.BoughtNumber{}, fail(err)
	}
	bought := ports.BoughtNumber{Number: deref(pn.PhoneNumber), SID: deref(pn.Sid)}
	if c := pn.Capabilities; c != nil {
		bought.Capabilities = core.Capabilities{SMS: c.Sms, Voice: c.Voice, MMS: c.Mms}
	}
	return bought, nil
}

// ReleaseNumber implements ports.Telephony. A number Twilio no longer has
// counts as released, so a release whose answer was lost can be retried.
func (t *Twilio) ReleaseNumber(ctx context.Context, sid string) error {
	if err := checkSID(ctx, sid); err != nil {
		return err
	}
	err := t.api.DeleteIncomingPhoneNumber(sid, nil)
	var e *twclient.TwilioRestError
	if err == nil || errors.As(err, &e) && e.Status == http.StatusNotFound {
		return nil
	}
	return fail(err)
}

// SendSMS implements ports.Telephony.
func (t *Twilio) SendSMS(ctx context.Context, req ports.SendSMS) (ports.SentSMS, error) {
	if err := live(ctx); err != nil {
		return ports.SentSMS{}, err
	}
	params := (&twapi.CreateMessageParams{}).SetFrom(req.From).SetTo(req.To).SetBody(req.Body)
	if req.StatusCallbackURL != "" {
		params.SetStatusCallback(req.StatusCallbackURL)
	}
	m, err := t.api.CreateMessage(params)
	if err != nil {
		return ports.SentSMS{}, fail(err)
	}
	status, ok := core.ParseSMSStatus(deref(m.Status))
	if !ok {
		status = core.SMSQueued
	}
	return ports.SentSMS{SID: deref(m.Sid), Status: status}, nil
}

// PointCalls implements ports.Telephony: the number's voice URL and its
// calls' status callback.
func (t *Twilio) PointCalls(ctx context.Context, sid string, hooks ports.VoiceWebhooks) error {
	if err := checkSID(ctx, sid); err != nil {
		return err
	}
	params := (&twapi.UpdateIncomingPhoneNumberParams{}).SetVoiceUrl(hooks.URL).SetVoiceMethod(http.MethodPost).
		SetStatusCallback(hooks.StatusURL).SetStatusCallbackMethod(http.MethodPost)
	if _, err := t.api.UpdateIncomingPhoneNumber(sid, params); err != nil {
		return fail(err)
	}
	return nil
}

// PlaceCall implements ports.Telephony with CreateCall: our TwiML as the
// answer, the status callback for every step, and the time limit.
func (t *Twilio) PlaceCall(ctx context.Context, req ports.PlaceCall) (ports.PlacedCall, error) {
	if err := live(ctx); err != nil {
		return ports.PlacedCall{}, err
	}
	params := (&twapi.CreateCallParams{}).SetFrom(req.From).SetTo(req.To).SetTwiml(string(req.Answer.TwiML()))
	if req.StatusCallbackURL != "" {
		params.SetStatusCallback(req.StatusCallbackURL).SetStatusCallbackMethod(http.MethodPost).
			SetStatusCallbackEvent([]string{"initiated", "ringing", "answered", "completed"})
	}
	if req.TimeLimit > 0 {
		params.SetTimeLimit(int(req.TimeLimit / time.Second))
	}
	c, err := t.api.CreateCall(params)
	if err != nil {
		return ports.PlacedCall{}, fail(err)
	}
	// The call is queued at Twilio; its status callback tells the rest.
	return ports.PlacedCall{SID: deref(c.Sid), Status: core.CallQueued}, nil
}

// HangUp implements ports.Telephony: the call's status set to completed,
// which Twilio takes for a call in progress and for one ringing alike.
func (t *Twilio) HangUp(ctx context.Context, sid string) error {
	if err := checkSID(ctx, sid); err != nil {
		return err
	}
	if _, err := t.api.UpdateCall(sid, (&twapi.UpdateCallParams{}).SetStatus("completed")); err != nil {
		return fail(err)
	}
	return nil
}

// live refuses to start a call for a caller who has gone: twilio-go cannot
// cancel one once it is under way.
func live(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return core.Unavailable("the request to Twilio was abandoned: %v", err)
	}
	return nil
}

// checkSID keeps a sid from reshaping the request path: twilio-go pastes it
// in unescaped.
func checkSID(ctx context.Context, sid string) error {
	if sid == "" {
		return core.Invalid(core.NonFieldErrors, "a Twilio sid is required")
	}
	for _, r := range sid {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9') {
			return core.Invalid(core.NonFieldErrors, "%q is not a Twilio sid", sid)
		}
	}
	return live(ctx)
}

// Twilio's codes for credentials that twilio-go itself finds malformed.
const (
	codeBadUsername = 21222
	codeBadPassword = 21224
)

// fail turns a twilio-go error into a core error. A 4xx is the request's
// fault and carries Twilio's reason; anything else (5xx, throttling, our own
// credentials, no answer) is worth retrying later. Transport errors are
// unwrapped from *url.Error so that the request URL stays out of the message.
func fail(err error) error {
	var e *twclient.TwilioRestError
	if !errors.As(err, &e) {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return core.Unavailable("Twilio did not answer in time")
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return core.Unavailable("Twilio is unavailable: %v", err)
	}
	switch {
	case e.Status == http.StatusUnauthorized || e.Code == codeBadUsername || e.Code == codeBadPassword:
		return core.Unavailable("Twilio refused Callsign's credentials: %s", reason(e))
	case e.Status == http.StatusTooManyRequests || e.Status < 400 || e.Status >= 500:
		return core.Unavailable("Twilio failed: %s", reason(e))
	}
	return core.Invalid(core.NonFieldErrors, "%s", reason(e))
}

// reason is Twilio's message with its error code, which Twilio's docs index.
func reason(e *twclient.TwilioRestError) string {
	return fmt.Sprintf("%s (Twilio error %d)", e.Message, e.Code)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
