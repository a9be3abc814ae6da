package twilio_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/callsign/callsign/adapters/twilio"
	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// Credentials shaped like Twilio's: twilio-go rejects non-alphanumeric ones
// before sending anything.
const (
	accountSID = "AC0123456789abcdef0123456789abcdef"
	authToken  = "authtoken0123456789abcdef0123456"
	numberSID  = "PN0123456789abcdef0123456789abcdef"
	account    = "/2010-04-01/Accounts/" + accountSID
)

// serve starts a fake of Twilio's REST API: it demands Basic auth with the
// account's credentials, serves routes ("METHOD /path" patterns) and fails
// the test on any request it was not told to expect.
func serve(t *testing.T, routes map[string]http.HandlerFunc) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	for pattern, h := range routes {
		mux.HandleFunc(pattern, h)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("unexpected request %s %s", r.Method, r.URL)
		twilioError(w, http.StatusNotFound, 20404, "The requested resource "+r.URL.Path+" was not found")
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if user, pass, ok := r.BasicAuth(); !ok || user != accountSID || pass != authToken {
			t.Errorf("%s %s: Basic auth %q:%q, want the account's SID and token", r.Method, r.URL.Path, user, pass)
			twilioError(w, http.StatusUnauthorized, 20003, "Authenticate")
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func client(baseURL string, timeout time.Duration) *twilio.Twilio {
	return twilio.New(twilio.Config{
		AccountSID: accountSID,
		AuthToken:  authToken,
		HTTPClient: &http.Client{Timeout: timeout},
		APIBaseURL: baseURL,
	})
}

func fake(t *testing.T, routes map[string]http.HandlerFunc) *twilio.Twilio {
	return client(serve(t, routes).URL, 5*time.Second)
}

// params checks that a request carries exactly want: in the query for GET
// and DELETE, form-encoded in the body otherwise, as Twilio takes them.
func params(t *testing.T, r *http.Request, want url.Values) {
	t.Helper()
	got := r.URL.Query()
	if r.Method == http.MethodPost {
		if ct := r.Header.Get("Content-Type"); ct != "application/x-www-form-urlencoded" {
			t.Errorf("%s %s: Content-Type %q, want a form", r.Method, r.URL.Path, ct)
		}
		if err := r.ParseForm(); err != nil {
			t.Fatalf("%s %s: %v", r.Method, r.URL.Path, err)
		}
		got = r.PostForm
	}
	if !maps.EqualFunc(got, want, slices.Equal) {
		t.Errorf("%s %s: params %v, want %v", r.Method, r.URL.Path, got, want)
	}
}

func reply(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

func twilioError(w http.ResponseWriter, status, code int, message string) {
	reply(w, status, map[string]any{
		"status":    status,
		"code":      code,
		"message":   message,
		"more_info": fmt.Sprintf("https://www.twilio.com/docs/errors/%d", code),
	})
}

func available(numbers ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		list := []map[string]any{}
		for _, n := range numbers {
			list = append(list, map[string]any{
				"friendly_name": n, "phone_number": n, "iso_country": "US",
				"capabilities": map[string]bool{"voice": true, "SMS": true, "MMS": true},
			})
		}
		reply(w, http.StatusOK, map[string]any{
			"available_phone_numbers": list,
			"uri":                     r.URL.RequestURI(),
			"next_page_uri":           nil,
		})
	}
}

func incomingNumber(number string) map[string]any {
	return map[string]any{
		"sid": numberSID, "account_sid": accountSID, "phone_number": number,
		"capabilities": map[string]bool{"voice": true, "sms": true, "mms": false, "fax": false},
	}
}

// kind checks an error's core kind and that it never carries the token.
func kind(t *testing.T, err error, want core.Kind) *core.Error {
	t.Helper()
	var e *core.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T), want a *core.Error", err, err)
	}
	if e.Kind != want {
		t.Errorf("kind %v (%q), want %v", e.Kind, e.Error(), want)
	}
	if strings.Contains(e.Error(), authToken) {
		t.Errorf("error %q carries the auth token", e.Error())
	}
	return e
}

func TestName(t *testing.T) {
	if got := twilio.New(twilio.Config{}).Name(); got != "twilio" {
		t.Errorf("Name() = %q", got)
	}
}

func TestBuyNumber(t *testing.T) {
	for _, tc := range []struct {
		name       string
		req        ports.BuyNumber
		wantCreate url.Values
	}{{
		name: "sms only",
		req:  ports.BuyNumber{CountryCode: "US", SMSWebhookURL: "https://cs.example/webhooks/twilio/sms/"},
		wantCreate: url.Values{
			"PhoneNumber": {"+14155550142"},
			"SmsUrl":      {"https://cs.example/webhooks/twilio/sms/"},
			"SmsMethod":   {"POST"},
		},
	}, {
		name: "with voice",
		req: ports.BuyNumber{CountryCode: "US", SMSWebhookURL: "https://cs.example/webhooks/twilio/sms/",
			Voice: ports.VoiceWebhooks{URL: "https://cs.example/webhooks/twilio/voice/", StatusURL: "https://cs.example/webhooks/twilio/call-status/"}},
		wantCreate: url.Values{
			"PhoneNumber":          {"+14155550142"},
			"SmsUrl":               {"https://cs.example/webhooks/twilio/sms/"},
			"SmsMethod":            {"POST"},
			"VoiceUrl":             {"https://cs.example/webhooks/twilio/voice/"},
			"VoiceMethod":          {"POST"},
			"StatusCallback":       {"https://cs.example/webhooks/twilio/call-status/"},
			"StatusCallbackMethod": {"POST"},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			created := 0
			tw := fake(t, map[string]http.HandlerFunc{
				"GET " + account + "/AvailablePhoneNumbers/US/Local.json": func(w http.ResponseWriter, r *http.Request) {
					params(t, r, url.Values{"SmsEnabled": {"true"}, "PageSize": {"1"}})
					available("+14155550142")(w, r)
				},
				"POST " + account + "/IncomingPhoneNumbers.json": func(w http.ResponseWriter, r *http.Request) {
					created++
					params(t, r, tc.wantCreate)
					reply(w, http.StatusCreated, incomingNumber("+14155550142"))
				},
			})
			got, err := tw.BuyNumber(context.Background(), tc.req)
			if err != nil {
				t.Fatal(err)
			}
			want := ports.BoughtNumber{Number: "+14155550142", SID: numberSID,
				Capabilities: core.Capabilities{SMS: true, Voice: true}}
			if got != want || created != 1 {
				t.Errorf("BuyNumber = %+v after %d creates, want %+v after 1", got, created, want)
			}
		})
	}
}

func TestBuyNumberNoneAvailable(t *testing.T) {
	tw := fake(t, map[string]http.HandlerFunc{
		"GET " + account + "/AvailablePhoneNumbers/GB/Local.json": available(),
	})
	_, err := tw.BuyNumber(context.Background(), ports.BuyNumber{CountryCode: "GB", SMSWebhookURL: "https://cs.example/sms"})
	e := kind(t, err, core.KindInvalid)
	if got := e.Fields[core.NonFieldErrors]; len(got) != 1 || got[0] != "no local numbers available in GB" {
		t.Errorf("non_field_errors = %q", got)
	}
}

func TestBuyNumberUnsupportedCountry(t *testing.T) {
	tw := fake(t, map[string]http.HandlerFunc{
		"GET " + account + "/AvailablePhoneNumbers/ZZ/Local.json": func(w http.ResponseWriter, r *http.Request) {
			twilioError(w, http.StatusNotFound, 20404, "The requested resource "+r.URL.Path+" was not found")
		},
	})
	_, err := tw.BuyNumber(context.Background(), ports.BuyNumber{CountryCode: "ZZ", SMSWebhookURL: "https://cs.example/sms"})
	e := kind(t, err, core.KindInvalid)
	if !strings.Contains(e.Message, "Twilio has no numbers in ZZ") || !strings.Contains(e.Message, "was not found (Twilio error 20404)") {
		t.Errorf("message %q lacks the country or Twilio's reason", e.Message)
	}
}

func TestBuyNumberGoneCaller(t *testing.T) {
	tw := fake(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := tw.BuyNumber(ctx, ports.BuyNumber{CountryCode: "US"})
	kind(t, err, core.KindUnavailable)
}

func TestSendSMS(t *testing.T) {
	tw := fake(t, map[string]http.HandlerFunc{
		"POST " + account + "/Messages.json": func(w http.ResponseWriter, r *http.Request) {
			params(t, r, url.Values{
				"From":           {"+14155550142"},
				"To":             {"+442079460000"},
				"Body":           {"héllo & goodbye"},
				"StatusCallback": {"https://cs.example/webhooks/twilio/status/"},
			})
			reply(w, http.StatusCreated, map[string]any{
				"sid": "SM0123456789abcdef0123456789abcdef", "status": "queued",
				"from": "+14155550142", "to": "+442079460000", "body": "héllo & goodbye",
			})
		},
	})
	got, err := tw.SendSMS(context.Background(), ports.SendSMS{
		From: "+14155550142", To: "+442079460000", Body: "héllo & goodbye",
		StatusCallbackURL: "https://cs.example/webhooks/twilio/status/",
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := (ports.SentSMS{SID: "SM0123456789abcdef0123456789abcdef", Status: core.SMSQueued}); got != want {
		t.Errorf("SendSMS = %+v, want %+v", got, want)
	}
}

func TestSendSMSStatus(t *testing.T) {
	for twilioStatus, want := range map[string]core.SMSStatus{
		"accepted": core.SMSQueued,
		"sending":  core.SMSSent,
		"sent":     core.SMSSent,
		"failed":   core.SMSFailed,
		"":         core.SMSQueued,
		"unheard":  core.SMSQueued,
	} {
		tw := fake(t, map[string]http.HandlerFunc{
			"POST " + account + "/Messages.json": func(w http.ResponseWriter, r *http.Request) {
				reply(w, http.StatusCreated, map[string]any{"sid": "SM1", "status": twilioStatus})
			},
		})
		got, err := tw.SendSMS(context.Background(), ports.SendSMS{From: "+14155550142", To: "+14155550143", Body: "hi"})
		if err != nil || got.Status != want {
			t.Errorf("Twilio status %q: SendSMS = %+v, %v; want status %q", twilioStatus, got, err, want)
		}
	}
}

func TestSendSMSRejected(t *testing.T) {
	const message = "The 'To' number is not a valid phone number."
	tw := fake(t, map[string]http.HandlerFunc{
		"POST " + account + "/Messages.json": func(w http.ResponseWriter, r *http.Request) {
			twilioError(w, http.StatusBadRequest, 21211, message)
		},
	})
	_, err := tw.SendSMS(context.Background(), ports.SendSMS{From: "+14155550142", To: "+1555", Body: "hi"})
	e := kind(t, err, core.KindInvalid)
	want := message + " (Twilio error 21211)"
	if got := e.Fields[core.NonFieldErrors]; len(got) != 1 || got[0] != want {
		t.Errorf("non_field_errors = %q, want [%q]", got, want)
	}
}

func TestUnavailable(t *testing.T) {
	send := func(tw *twilio.Twilio) error {
		_, err := tw.SendSMS(context.Background(), ports.SendSMS{From: "+14155550142", To: "+14155550143", Body: "hi"})
		return err
	}
	answer := func(h http.HandlerFunc) *twilio.Twilio {
		return fake(t, map[string]http.HandlerFunc{"POST " + account + "/Messages.json": h})
	}

	t.Run("500", func(t *testing.T) {
		tw := answer(func(w http.ResponseWriter, r *http.Request) {
			twilioError(w, http.StatusInternalServerError, 20500, "An internal server error has occurred")
		})
		e := kind(t, send(tw), core.KindUnavailable)
		if !strings.Contains(e.Message, "An internal server error has occurred (Twilio error 20500)") {
			t.Errorf("message %q lacks Twilio's reason", e.Message)
		}
	})
	t.Run("503 from a proxy", func(t *testing.T) {
		tw := answer(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "<html>Service Unavailable</html>", http.StatusServiceUnavailable)
		})
		kind(t, send(tw), core.KindUnavailable)
	})
	t.Run("429", func(t *testing.T) {
		tw := answer(func(w http.ResponseWriter, r *http.Request) {
			twilioError(w, http.StatusTooManyRequests, 20429, "Too Many Requests")
		})
		kind(t, send(tw), core.KindUnavailable)
	})
	t.Run("our credentials refused", func(t *testing.T) {
		tw := answer(func(w http.ResponseWriter, r *http.Request) {
			twilioError(w, http.StatusUnauthorized, 20003, "Authenticate")
		})
		kind(t, send(tw), core.KindUnavailable)
	})
	t.Run("malformed credentials", func(t *testing.T) {
		tw := twilio.New(twilio.Config{AccountSID: accountSID, AuthToken: "not-a-token", APIBaseURL: "http://127.0.0.1:1"})
		e := kind(t, send(tw), core.KindUnavailable)
		if strings.Contains(e.Message, "not-a-token") {
			t.Errorf("message %q carries the token", e.Message)
		}
	})
	t.Run("hangs past the timeout", func(t *testing.T) {
		stop := make(chan struct{})
		srv := serve(t, map[string]http.HandlerFunc{
			"POST " + account + "/Messages.json": func(w http.ResponseWriter, r *http.Request) {
				select {
				case <-r.Context().Done():
				case <-stop:
				}
			},
		})
		t.Cleanup(func() { close(stop) }) // runs before the server's Close
		start := time.Now()
		e := kind(t, send(client(srv.URL, 200*time.Millisecond)), core.KindUnavailable)
		if elapsed := time.Since(start); elapsed > 3*time.Second {
			t.Errorf("gave up after %v", elapsed)
		}
		if e.Message != "Twilio did not answer in time" {
			t.Errorf("message %q", e.Message)
		}
	})
	t.Run("connection refused", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		srv.Close()
		e := kind(t, send(client(srv.URL, time.Second)), core.KindUnavailable)
		if strings.Contains(e.Message, accountSID) {
			t.Errorf("message %q carries the request URL", e.Message)
		}
	})
}

func TestPointCalls(t *testing.T) {
	tw := fake(t, map[string]http.HandlerFunc{
		"POST " + account + "/IncomingPhoneNumbers/" + numberSID + ".json": func(w http.ResponseWriter, r *http.Request) {
			params(t, r, url.Values{"VoiceUrl": {"https://cs.example/webhooks/twilio/voice/"}, "VoiceMethod": {"POST"},
				"StatusCallback": {"https://cs.example/webhooks/twilio/call-status/"}, "StatusCallbackMethod": {"POST"}})
			reply(w, http.StatusOK, incomingNumber("+14155550142"))
		},
	})
	hooks := ports.VoiceWebhooks{URL: "https://cs.example/webhooks/twilio/voice/", StatusURL: "https://cs.example/webhooks/twilio/call-status/"}
	if err := tw.PointCalls(context.Background(), numberSID, hooks); err != nil {
		t.Errorf("PointCalls: %v", err)
	}
}

func TestInputCannotReshapeThePath(t *testing.T) {
	tw := fake(t, nil)
	for _, cc := range []string{"", "us", "../Messages", "U/"} {
		_, err := tw.BuyNumber(context.Background(), ports.BuyNumber{CountryCode: cc})
		kind(t, err, core.KindInvalid)
	}
	for _, sid := range []string{"", "../Messages", "PN1/../../x", "PN1?x=1"} {
		kind(t, tw.PointCalls(context.Background(), sid, ports.VoiceWebhooks{URL: "https://cs.example/webhooks/twilio/voice/"}), core.KindInvalid)
		kind(t, tw.ReleaseNumber(context.Background(), sid), core.KindInvalid)
	}
}

func TestReleaseNumber(t *testing.T) {
	deleted := 0
	tw := fake(t, map[string]http.HandlerFunc{
		"DELETE " + account + "/IncomingPhoneNumbers/" + numberSID + ".json": func(w http.ResponseWriter, r *http.Request) {
			deleted++
			params(t, r, url.Values{})
			w.WriteHeader(http.StatusNoContent)
		},
		"DELETE " + account + "/IncomingPhoneNumbers/PNgone.json": func(w http.ResponseWriter, r *http.Request) {
			twilioError(w, http.StatusNotFound, 20404, "The requested resource "+r.URL.Path+" was not found")
		},
		"DELETE " + account + "/IncomingPhoneNumbers/PNbroken.json": func(w http.ResponseWriter, r *http.Request) {
			twilioError(w, http.StatusInternalServerError, 20500, "An internal server error has occurred")
		},
	})
	if err := tw.ReleaseNumber(context.Background(), numberSID); err != nil || deleted != 1 {
		t.Errorf("ReleaseNumber: %v after %d deletes", err, deleted)
	}
	if err := tw.ReleaseNumber(context.Background(), "PNgone"); err != nil {
		t.Errorf("releasing a number Twilio no longer has: %v", err)
	}
	kind(t, tw.ReleaseNumber(context.Background(), "PNbroken"), core.KindUnavailable)
}

// Twilio's published test vectors: the examples in twilio-python's
// tests/unit/test_request_validator.py and twilio-node's
// spec/validation.spec.js, signed with the auth token "12345".
const (
	vectorToken = "12345"
	vectorURL   = "https://mycompany.com/myapp.php?foo=1&bar=2"
)

var vectorCall = url.Values{
	"CallSid": {"CA1234567890ABCDE"},
	"Caller":  {"+14158675309"},
	"Digits":  {"1234"},
	"From":    {"+14158675309"},
	"To":      {"+18005551212"},
}

func TestSignatureVectors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		url    string
		params url.Values
		want   string
	}{
		{"the call example", vectorURL, vectorCall, "RSOYDt4T1cUTdK1PDd93/VVr8B8="},
		{"names sorted, values sorted, duplicates once", vectorURL,
			url.Values{"Sid": {"CA123"}, "SidAccount": {"AC123"}, "Digits": {"5678", "1234", "1234"}}, "IK+Dwps556ElfBT0I3Rgjkr1wJU="},
		{"an array parameter", vectorURL,
			url.Values{"MessagingBinding.Address": {"+1325xxxxxxx", "+1415xxxxxxx"}}, "83O6e2vORAoJHUNzJjDWN1jz+BA="},
		{"an array parameter in the other order", vectorURL,
			url.Values{"MessagingBinding.Address": {"+1415xxxxxxx", "+1325xxxxxxx"}}, "83O6e2vORAoJHUNzJjDWN1jz+BA="},
		{"http with a port", "http://mycompany.com:1234/myapp.php?foo=1&bar=2", vectorCall, "Zmvh+3yNM1Phv2jhDCwEM3q5ebU="},
		{"https with its default port", "https://mycompany.com:443/myapp.php?foo=1&bar=2", vectorCall, "kvajT1Ptam85bY51eRf/AJRuM3w="},
		{"http with its default port", "http://mycompany.com:80/myapp.php?foo=1&bar=2", vectorCall, "0ZXoZLH/DfblKGATFgpif+LLRf4="},
	} {
		if got := twilio.Signature(vectorToken, tc.url, tc.params); got != tc.want {
			t.Errorf("%s: signature %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestVerifyWebhookPorts: as Twilio's libraries do, a signature of the URL
// with or without the scheme's default port is accepted (Twilio signs
// either), and a URL's own port may be dropped.
func TestVerifyWebhookPorts(t *testing.T) {
	tw := twilio.New(twilio.Config{AccountSID: accountSID, AuthToken: vectorToken})
	for _, tc := range []struct{ url, signature string }{
		{vectorURL, "RSOYDt4T1cUTdK1PDd93/VVr8B8="},
		{"https://mycompany.com:1234/myapp.php?foo=1&bar=2", "RSOYDt4T1cUTdK1PDd93/VVr8B8="},
		{"http://mycompany.com:1234/myapp.php?foo=1&bar=2", "Zmvh+3yNM1Phv2jhDCwEM3q5ebU="},
		{vectorURL, "kvajT1Ptam85bY51eRf/AJRuM3w="},
		{"http://mycompany.com/myapp.php?foo=1&bar=2", "0ZXoZLH/DfblKGATFgpif+LLRf4="},
	} {
		if !tw.VerifyWebhook(tc.url, vectorCall, tc.signature) {
			t.Errorf("%s with %s: refused", tc.url, tc.signature)
		}
	}
	if tw.VerifyWebhook("https://mycompany.com:8443/myapp.php?foo=1&bar=2", vectorCall, "kvajT1Ptam85bY51eRf/AJRuM3w=") {
		t.Error("the signature of port 443 accepted for port 8443")
	}
}

func TestVerifyWebhook(t *testing.T) {
	tw := twilio.New(twilio.Config{AccountSID: accountSID, AuthToken: authToken})
	const hook = "https://cs.example/webhooks/twilio/sms/?identity=7"
	form := url.Values{
		"MessageSid": {"SM0123456789abcdef0123456789abcdef"},
		"AccountSid": {accountSID},
		"From":       {"+442079460000"},
		"To":         {"+14155550142"},
		"Body":       {"Hello, agent ✓"},
		"NumMedia":   {"0"},
	}
	good := twilio.Signature(authToken, hook, form)

	if !tw.VerifyWebhook(hook, form, good) {
		t.Fatalf("a correctly signed webhook was refused (signature %s)", good)
	}
	tampered := maps.Clone(form)
	tampered.Set("Body", "Hello, agent ✗")
	extra := maps.Clone(form)
	extra.Set("Extra", "1")
	// A value added to a signed parameter: a signature over first values
	// only would not see it.
	appended := maps.Clone(form)
	appended["Body"] = []string{"Hello, agent ✓", "and more"}
	for name, tc := range map[string]struct {
		url       string
		form      url.Values
		signature string
	}{
		"changed body param":   {hook, tampered, good},
		"extra param":          {hook, extra, good},
		"appended value":       {hook, appended, good},
		"changed URL":          {"https://cs.example/webhooks/twilio/sms/?identity=8", form, good},
		"other host":           {"https://evil.example/webhooks/twilio/sms/?identity=7", form, good},
		"signed by another":    {hook, form, twilio.Signature("othertoken0123456789abcdef012345", hook, form)},
		"no signature":         {hook, form, ""},
		"signature not base64": {hook, form, "not a signature"},
	} {
		if tw.VerifyWebhook(tc.url, tc.form, tc.signature) {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestCheck is callsign doctor's question: are the credentials good?
func TestCheck(t *testing.T) {
	accountAnswer := func(status string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"sid": %q, "status": %q}`, accountSID, status)
		}
	}
	if err := fake(t, map[string]http.HandlerFunc{"GET " + account + ".json": accountAnswer("active")}).Check(context.Background()); err != nil {
		t.Fatalf("an active account: %v", err)
	}
	err := fake(t, map[string]http.HandlerFunc{"GET " + account + ".json": accountAnswer("suspended")}).Check(context.Background())
	if e := kind(t, err, core.KindUnavailable); !strings.Contains(e.Message, "suspended") {
		t.Fatalf("a suspended account: %v", e)
	}
	refused := fake(t, map[string]http.HandlerFunc{"GET " + account + ".json": func(w http.ResponseWriter, r *http.Request) {
		twilioError(w, http.StatusUnauthorized, 20003, "Authenticate")
	}}).Check(context.Background())
	if e := kind(t, refused, core.KindUnavailable); !strings.Contains(e.Message, "refused") || strings.Contains(e.Message, authToken) {
		t.Fatalf("refused credentials: %v", e)
	}
}
