package httpapi

import (
	"encoding/base64"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
)

type callView struct {
	ID              int64       `json:"id"`
	Identity        string      `json:"identity"`
	Phone           string      `json:"phone"`
	Direction       string      `json:"direction"`
	FromNumber      string      `json:"from_number"`
	ToNumber        string      `json:"to_number"`
	Status          string      `json:"status"`
	StartedDT       apiTime     `json:"started_dt"`
	EndedDT         *apiTime    `json:"ended_dt"`
	DurationSeconds *int        `json:"duration_seconds"`
	ProviderSID     string      `json:"provider_sid"`
	Mode            *string     `json:"mode"`
	Stream          *streamView `json:"stream"`
	RecordingURL    *string     `json:"recording_url"`
	EndReason       *string     `json:"end_reason"`
}

// viewCall shows a call, its recording's URL absolute under the base URL.
func (s *server) viewCall(c core.Call) callView {
	return viewCallUnder(s.baseURL, c)
}

func viewCallUnder(baseURL string, c core.Call) callView {
	v := callView{ID: c.ID, Identity: c.IdentityID, Phone: c.PhoneNumber, Direction: string(c.Direction), FromNumber: c.FromNumber,
		ToNumber: c.ToNumber, Status: string(c.Status), StartedDT: apiTime(c.StartedAt), EndedDT: optTime(&c.EndedAt),
		ProviderSID: c.ProviderSID, Mode: optString(string(c.Mode)), Stream: viewStream(c.Stream), EndReason: optString(string(c.EndReason))}
	if c.DurationSeconds >= 0 {
		v.DurationSeconds = &c.DurationSeconds
	}
	if c.RecordingBytes > 0 {
		u := baseURL + "/api/calls/" + strconv.FormatInt(c.ID, 10) + "/recording/"
		v.RecordingURL = &u
	}
	return v
}

func (s *server) listCalls(c *gin.Context) (int, any, error) {
	q := newStrictQuery(c)
	identity, after := q.uuid("identity"), q.time("after")
	lq := q.list()
	if err := q.err(); err != nil {
		return 0, nil, err
	}
	list, total, err := s.app.Calls.List(c.Request.Context(), principal(c), identity, after, lq.page)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, listed(s, c, lq, list, total, s.viewCall), nil
}

func (s *server) getCall(c *gin.Context) (int, any, error) {
	id, err := pathID(c, "id", "Call")
	if err != nil {
		return 0, nil, err
	}
	call, err := s.app.Calls.Get(c.Request.Context(), principal(c), id)
	return http.StatusOK, s.viewCall(call), err
}

// voiceWebhook takes an incoming call from Twilio.
func (s *server) voiceWebhook(c *gin.Context) {
	in, err := s.providerWebhook(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.answerCall(c, in)
}

// answerCall records an incoming call (TwiML's parameters, which TeXML
// shares), then sends it on to the identity's voice agent.
func (s *server) answerCall(c *gin.Context, in *input) {
	answer, err := s.app.Calls.Receive(c.Request.Context(), app.InboundCall{SID: in.text("CallSid"), From: in.text("From"),
		To: in.text("To"), Status: in.text("CallStatus")})
	if err != nil {
		s.fail(c, err)
		return
	}
	c.Data(http.StatusOK, "text/xml; charset=utf-8", answer.TwiML())
}

// callStatusWebhook takes Twilio's report on a call's progress.
func (s *server) callStatusWebhook(c *gin.Context) (int, any, error) {
	in, err := s.providerWebhook(c)
	if err != nil {
		return 0, nil, err
	}
	return s.callStatus(c, in)
}

// callStatus records a report on a call's progress, in TwiML's parameters.
func (s *server) callStatus(c *gin.Context, in *input) (int, any, error) {
	return http.StatusNoContent, nil, s.app.Calls.StatusReport(c.Request.Context(), in.text("CallSid"), in.text("CallStatus"),
		in.text("CallDuration"))
}

// simulatedCall places a call to one of the account's numbers through the
// simulator: Duration (seconds, default 1) until it hangs up.
func (s *server) simulatedCall(c *gin.Context) (int, any, error) {
	in, err := readInput(c)
	if err != nil {
		return 0, nil, err
	}
	from, to := in.text("From"), in.text("To")
	stream, audio, digits := in.boolean("Stream"), in.text("Audio"), in.text("Digits")
	seconds := int64(1)
	if d := in.text("Duration"); d != "" {
		if seconds, err = strconv.ParseInt(d, 10, 64); err != nil {
			in.problems.Add("Duration", "Enter a whole number of seconds.")
		}
	}
	if err := in.err(); err != nil {
		return 0, nil, err
	}
	if seconds < 0 || seconds > int64(app.MaxSimulatedCall/time.Second) {
		seconds = -1 // Simulate names the range
	}
	duration := time.Duration(seconds) * time.Second
	if stream != nil && *stream {
		mulaw, err := base64.StdEncoding.DecodeString(audio)
		if err != nil {
			return 0, nil, core.Invalid("Audio", "Enter μ-law audio in base64.")
		}
		call, err := s.app.Calls.SimulateStream(c.Request.Context(), principal(c), from, to, duration,
			app.SimulatedStream{Audio: mulaw, Digits: digits})
		return http.StatusCreated, s.viewCall(call), err
	}
	call, err := s.app.Calls.Simulate(c.Request.Context(), principal(c), from, to, duration)
	return http.StatusCreated, s.viewCall(call), err
}
