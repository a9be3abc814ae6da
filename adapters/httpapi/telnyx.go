package httpapi

import (
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
)

// TelnyxVerifier checks a Telnyx webhook's telnyx-timestamp and
// telnyx-signature-ed25519 headers against its raw body (telnyx.Verifier).
type TelnyxVerifier interface {
	Verify(timestamp, signature string, body []byte) error
}

// telnyxBody reads a Telnyx webhook's raw body, bounded, and checks its
// signature: 403 when it does not verify, before anything is parsed; 404
// when Telnyx is not the provider.
func (s *server) telnyxBody(c *gin.Context) ([]byte, error) {
	if s.telnyx == nil {
		return nil, core.NotFound("Telnyx is not this service's telephony provider (CALLSIGN_TELEPHONY).")
	}
	body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, maxBodyBytes))
	if err != nil {
		if maxErr := (*http.MaxBytesError)(nil); errors.As(err, &maxErr) {
			return nil, errTooLarge
		}
		return nil, err
	}
	if err := s.telnyx.Verify(c.GetHeader("telnyx-timestamp"), c.GetHeader("telnyx-signature-ed25519"), body); err != nil {
		s.log.Warn("telnyx: a webhook was refused", "path", c.Request.URL.Path, "reason", err)
		return nil, core.Forbidden("The request signature is missing or invalid.")
	}
	return body, nil
}

// telnyxForm reads a signed TeXML webhook: form parameters, as Twilio's.
func (s *server) telnyxForm(c *gin.Context) (*input, error) {
	body, err := s.telnyxBody(c)
	if err != nil {
		return nil, err
	}
	const form = "application/x-www-form-urlencoded"
	if mediaType, _, _ := mime.ParseMediaType(c.GetHeader("Content-Type")); mediaType != form {
		return nil, &statusError{http.StatusUnsupportedMediaType, "TeXML webhooks take " + form + " bodies only."}
	}
	values, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, malformed("Malformed form body.")
	}
	return &input{form: values}, nil
}

// telnyxEvent is a messaging webhook: the fields of message.received,
// message.sent and message.finalized that we read
// (https://developers.telnyx.com/docs/messaging/messages/receiving-webhooks).
type telnyxEvent struct {
	Data struct {
		EventType string `json:"event_type"`
		Payload   struct {
			ID   string `json:"id"`
			From struct {
				PhoneNumber string `json:"phone_number"`
			} `json:"from"`
			To []struct {
				PhoneNumber string `json:"phone_number"`
				Status      string `json:"status"`
			} `json:"to"`
			Text  string `json:"text"`
			Media []struct {
				URL         string `json:"url"`
				ContentType string `json:"content_type"`
			} `json:"media"`
			Errors []struct {
				Code   string `json:"code"`
				Title  string `json:"title"`
				Detail string `json:"detail"`
			} `json:"errors"`
		} `json:"payload"`
	} `json:"data"`
}

// telnyxMessagingWebhook takes the messaging profile's events: an inbound
// text, or a delivery report on one we sent. Other events are acknowledged.
func (s *server) telnyxMessagingWebhook(c *gin.Context) (int, any, error) {
	body, err := s.telnyxBody(c)
	if err != nil {
		return 0, nil, err
	}
	var ev telnyxEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		return 0, nil, malformed("Malformed JSON body.")
	}
	p := ev.Data.Payload
	to, status := "", ""
	if len(p.To) > 0 {
		to, status = p.To[0].PhoneNumber, p.To[0].Status
	}
	switch ev.Data.EventType {
	case "message.received":
		media := make([]core.SMSMedia, 0, min(len(p.Media), core.MaxSMSMedia))
		for _, m := range p.Media[:min(len(p.Media), core.MaxSMSMedia)] {
			media = append(media, core.SMSMedia{URL: m.URL, ContentType: m.ContentType})
		}
		_, err = s.app.SMS.Receive(c.Request.Context(), app.InboundSMS{From: p.From.PhoneNumber, To: to, Body: p.Text, SID: p.ID, Media: media})
	case "message.sent", "message.finalized":
		var code string
		reasons := make([]string, 0, len(p.Errors))
		for _, e := range p.Errors {
			code = e.Code
			reasons = append(reasons, strings.TrimSpace(e.Title+" "+e.Detail))
		}
		err = s.app.SMS.StatusReport(c.Request.Context(), p.ID, status, code, strings.Join(reasons, "; "))
	default:
		s.log.Debug("telnyx: an event we do not use was acknowledged", "event_type", ev.Data.EventType)
	}
	return http.StatusNoContent, nil, err
}

// telnyxVoiceWebhook takes an incoming call from the TeXML application.
func (s *server) telnyxVoiceWebhook(c *gin.Context) {
	in, err := s.telnyxForm(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.answerCall(c, in)
}

// telnyxCallStatusWebhook takes the TeXML application's report on a call.
func (s *server) telnyxCallStatusWebhook(c *gin.Context) (int, any, error) {
	in, err := s.telnyxForm(c)
	if err != nil {
		return 0, nil, err
	}
	return s.callStatus(c, in)
}
