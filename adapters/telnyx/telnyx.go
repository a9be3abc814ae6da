// Package telnyx implements ports.Telephony with Telnyx's REST API v2
// (https://developers.telnyx.com/api), over net/http: no Telnyx SDK for Go
// is served by our module proxy.
//
// Texts go out with POST /messages; numbers are searched, ordered with the
// messaging profile and the TeXML application (connection) attached, and
// deleted. Telnyx points a number's texts at the messaging profile's
// webhook URL and its calls at the TeXML application's voice URL, both set
// once at Telnyx (docs/providers.md), not per number. Webhooks are signed
// over their body (Verifier), not over a URL and form as Twilio's are.
package telnyx

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// DefaultAPIBase is Telnyx's API, version included.
const DefaultAPIBase = "https://api.telnyx.com/v2"

// Config is what the adapter needs to reach Telnyx.
type Config struct {
	APIKey string
	// MessagingProfileID is attached to every number bought: its webhook
	// URL receives the numbers' texts and delivery reports.
	MessagingProfileID string
	// ConnectionID is the TeXML application every number's calls go to.
	ConnectionID string
	// APIBase replaces DefaultAPIBase; tests point it at a local fake.
	APIBase string
	// HTTPClient carries every call's deadline. nil means the policy
	// Twilio's adapter gets from twilio-go: a 10 s timeout, no redirects
	// (a redirect would carry our API key to wherever it points).
	HTTPClient *http.Client
}

// Telnyx is a ports.Telephony backed by a Telnyx account.
type Telnyx struct {
	cfg    Config
	base   string
	client *http.Client
}

var _ ports.Telephony = (*Telnyx)(nil)

// New builds the adapter. It makes no request: a bad key shows on first use.
func New(cfg Config) *Telnyx {
	t := &Telnyx{cfg: cfg, base: strings.TrimSuffix(cfg.APIBase, "/"), client: cfg.HTTPClient}
	if t.base == "" {
		t.base = DefaultAPIBase
	}
	if t.client == nil {
		t.client = &http.Client{Timeout: 10 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	return t
}

// Name implements ports.Telephony.
func (t *Telnyx) Name() string { return "telnyx" }

// Check reads the messaging profile, which proves the key works and the
// profile exists (`callsign doctor`); it changes nothing.
func (t *Telnyx) Check(ctx context.Context) error {
	var profile struct {
		Data struct {
			Enabled bool `json:"enabled"`
		} `json:"data"`
	}
	if err := t.do(ctx, http.MethodGet, "/messaging_profiles/"+url.PathEscape(t.cfg.MessagingProfileID), nil, &profile); err != nil {
		return err
	}
	if !profile.Data.Enabled {
		return core.Unavailable("the Telnyx messaging profile %s is disabled", t.cfg.MessagingProfileID)
	}
	return nil
}

// feature is one entry of a number's features ({"name": "sms"}).
type feature struct {
	Name string `json:"name"`
}

// BuyNumber implements ports.Telephony: it takes the first number Telnyx
// offers in the country with both SMS and voice, and orders it with the
// messaging profile and TeXML application attached. The webhook URLs of
// req are the profile's and the application's at Telnyx, so they are not
// sent. The number's sid is its E.164 form, since an order answers before
// the number has its own id (orders may complete later).
func (t *Telnyx) BuyNumber(ctx context.Context, req ports.BuyNumber) (ports.BoughtNumber, error) {
	if !core.IsCountryCode(req.CountryCode) {
		return ports.BoughtNumber{}, core.Invalid(core.NonFieldErrors, "%q is not a country code", req.CountryCode)
	}
	q := url.Values{"filter[country_code]": {req.CountryCode}, "filter[features][]": {"sms", "voice"}, "filter[limit]": {"1"}}
	var found struct {
		Data []struct {
			PhoneNumber string    `json:"phone_number"`
			Features    []feature `json:"features"`
		} `json:"data"`
	}
	if err := t.do(ctx, http.MethodGet, "/available_phone_numbers?"+q.Encode(), nil, &found); err != nil {
		return ports.BoughtNumber{}, err
	}
	if len(found.Data) == 0 || found.Data[0].PhoneNumber == "" {
		return ports.BoughtNumber{}, core.Invalid(core.NonFieldErrors, "Telnyx has no numbers with SMS and voice available in %s", req.CountryCode)
	}
	number := found.Data[0]
	order := map[string]any{"phone_numbers": []map[string]string{{"phone_number": number.PhoneNumber}},
		"messaging_profile_id": t.cfg.MessagingProfileID, "connection_id": t.cfg.ConnectionID}
	var ordered struct {
		Data struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"data"`
	}
	if err := t.do(ctx, http.MethodPost, "/number_orders", order, &ordered); err != nil {
		return ports.BoughtNumber{}, err
	}
	if ordered.Data.Status == "failure" {
		return ports.BoughtNumber{}, core.Unavailable("Telnyx could not fill number order %s for %s", ordered.Data.ID, number.PhoneNumber)
	}
	bought := ports.BoughtNumber{Number: number.PhoneNumber, SID: number.PhoneNumber}
	for _, f := range number.Features {
		switch f.Name {
		case "sms":
			bought.Capabilities.SMS = true
		case "voice":
			bought.Capabilities.Voice = true
		case "mms":
			bought.Capabilities.MMS = true
		}
	}
	return bought, nil
}

// numberID finds the id of one of the account's numbers; found is false
// when the account does not have it.
func (t *Telnyx) numberID(ctx context.Context, e164 string) (id string, found bool, err error) {
	if !strings.HasPrefix(e164, "+") {
		return "", false, core.Invalid(core.NonFieldErrors, "%q is not a Telnyx number sid (an E.164 number)", e164)
	}
	var list struct {
		Data []struct {
			ID          string `json:"id"`
			PhoneNumber string `json:"phone_number"`
		} `json:"data"`
	}
	q := url.Values{"filter[phone_number]": {e164}}
	if err := t.do(ctx, http.MethodGet, "/phone_numbers?"+q.Encode(), nil, &list); err != nil {
		return "", false, err
	}
	for _, n := range list.Data {
		if n.PhoneNumber == e164 {
			return n.ID, true, nil
		}
	}
	return "", false, nil
}

// ReleaseNumber implements ports.Telephony. A number the account no longer
// has counts as released, so a release whose answer was lost can be retried.
func (t *Telnyx) ReleaseNumber(ctx context.Context, sid string) error {
	id, found, err := t.numberID(ctx, sid)
	if err != nil || !found {
		return err
	}
	status, err := t.send(ctx, http.MethodDelete, "/phone_numbers/"+url.PathEscape(id), nil, nil)
	if status == http.StatusNotFound { // released meanwhile
		return nil
	}
	return err
}

// PointCalls implements ports.Telephony: the number's calls go to the
// TeXML application, whose voice and status URLs are hooks' (set at Telnyx).
func (t *Telnyx) PointCalls(ctx context.Context, sid string, _ ports.VoiceWebhooks) error {
	id, found, err := t.numberID(ctx, sid)
	if err != nil {
		return err
	}
	if !found {
		return core.Invalid(core.NonFieldErrors, "the Telnyx account has no number %s", sid)
	}
	return t.do(ctx, http.MethodPatch, "/phone_numbers/"+url.PathEscape(id), map[string]string{"connection_id": t.cfg.ConnectionID}, nil)
}

// SendSMS implements ports.Telephony. The delivery reports of this message
// go to its status callback URL, which overrides the profile's.
func (t *Telnyx) SendSMS(ctx context.Context, req ports.SendSMS) (ports.SentSMS, error) {
	body := map[string]string{"from": req.From, "to": req.To, "text": req.Body}
	if req.StatusCallbackURL != "" {
		body["webhook_url"] = req.StatusCallbackURL
	}
	var sent struct {
		Data struct {
			ID string `json:"id"`
			To []struct {
				Status string `json:"status"`
			} `json:"to"`
		} `json:"data"`
	}
	if err := t.do(ctx, http.MethodPost, "/messages", body, &sent); err != nil {
		return ports.SentSMS{}, err
	}
	if sent.Data.ID == "" {
		return ports.SentSMS{}, core.Unavailable("Telnyx accepted the message without an id")
	}
	status := core.SMSQueued
	if len(sent.Data.To) > 0 {
		if s, ok := core.ParseSMSStatus(sent.Data.To[0].Status); ok {
			status = s
		}
	}
	return ports.SentSMS{SID: sent.Data.ID, Status: status}, nil
}

// PlaceCall implements ports.Telephony with the connection-scoped TeXML
// call (POST /texml/calls/{connection_id}): our answer as inline TeXML.
// Its progress reaches the TeXML application's status callback, set once
// at Telnyx as for incoming calls; TimeLimit is not among the parameters
// of that request, so a call's length is bounded by us (the bridge's
// deadline) and not by Telnyx.
func (t *Telnyx) PlaceCall(ctx context.Context, req ports.PlaceCall) (ports.PlacedCall, error) {
	var placed struct {
		CallSID string `json:"call_sid"`
	}
	body := map[string]string{"From": req.From, "To": req.To, "Texml": string(req.Answer.TwiML())}
	if err := t.do(ctx, http.MethodPost, "/texml/calls/"+url.PathEscape(t.cfg.ConnectionID), body, &placed); err != nil {
		return ports.PlacedCall{}, err
	}
	if placed.CallSID == "" {
		return ports.PlacedCall{}, core.Unavailable("Telnyx accepted the call without an id")
	}
	return ports.PlacedCall{SID: placed.CallSID, Status: core.CallQueued}, nil
}

// HangUp implements ports.Telephony with Call Control's hangup: a TeXML
// call's sid is its call control id. A call Telnyx no longer knows
// (ended) counts as hung up.
func (t *Telnyx) HangUp(ctx context.Context, sid string) error {
	status, err := t.send(ctx, http.MethodPost, "/calls/"+url.PathEscape(sid)+"/actions/hangup", map[string]string{}, nil)
	if status == http.StatusNotFound || status == http.StatusUnprocessableEntity {
		return nil
	}
	return err
}

// VerifyWebhook implements ports.Telephony for URL-and-form signatures,
// which Telnyx never makes: its webhooks are signed over their body and
// checked by a Verifier.
func (t *Telnyx) VerifyWebhook(string, url.Values, string) bool { return false }

// maxAnswer bounds what is read of an answer: Telnyx's are a few KB.
const maxAnswer = 1 << 20

// do is send without the answer's status.
func (t *Telnyx) do(ctx context.Context, method, path string, in, out any) error {
	_, err := t.send(ctx, method, path, in, out)
	return err
}

// send sends one request with a JSON body (when in is not nil) and decodes
// the JSON answer into out (when not nil). Errors are core errors: a 4xx
// other than our credentials and throttling is the request's fault, with
// Telnyx's reason; anything else is worth retrying later.
func (t *Telnyx) send(ctx context.Context, method, path string, in, out any) (int, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return 0, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, t.base+path, body)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+t.cfg.APIKey)
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := t.client.Do(req)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return 0, core.Unavailable("Telnyx did not answer in time")
		}
		var ue *url.Error
		if errors.As(err, &ue) { // keeps the request URL out of the message
			err = ue.Err
		}
		return 0, core.Unavailable("Telnyx is unavailable: %v", err)
	}
	defer res.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(res.Body, maxAnswer))
	if err != nil {
		return res.StatusCode, core.Unavailable("Telnyx's answer was cut short: %v", err)
	}
	if res.StatusCode/100 != 2 {
		return res.StatusCode, refusal(res.StatusCode, answer)
	}
	if out == nil {
		return res.StatusCode, nil
	}
	if err := json.Unmarshal(answer, out); err != nil {
		return res.StatusCode, core.Unavailable("Telnyx answered %s %s with something other than JSON: %v", method, strings.SplitN(path, "?", 2)[0], err)
	}
	return res.StatusCode, nil
}

// refusal turns an error answer into a core error: Telnyx's errors, each
// with its code, which Telnyx's docs index.
func refusal(status int, answer []byte) error {
	var body struct {
		Errors []struct {
			Code   string `json:"code"`
			Title  string `json:"title"`
			Detail string `json:"detail"`
		} `json:"errors"`
	}
	_ = json.Unmarshal(answer, &body)
	reasons := make([]string, 0, len(body.Errors))
	for _, e := range body.Errors {
		r := e.Title
		if e.Detail != "" && e.Detail != e.Title {
			r += ": " + e.Detail
		}
		reasons = append(reasons, fmt.Sprintf("%s (Telnyx error %s)", r, e.Code))
	}
	if len(reasons) == 0 {
		reasons = append(reasons, fmt.Sprintf("HTTP %d", status))
	}
	reason := strings.Join(reasons, "; ")
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return core.Unavailable("Telnyx refused Callsign's credentials: %s", reason)
	case status == http.StatusTooManyRequests || status >= 500 || status < 400:
		return core.Unavailable("Telnyx failed: %s", reason)
	}
	return core.Invalid(core.NonFieldErrors, "%s", reason)
}
