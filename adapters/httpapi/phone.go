package httpapi

import (
	"fmt"
	"mime"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

type phoneView struct {
	ID           int64             `json:"id"`
	Number       string            `json:"number"`
	Identity     string            `json:"identity"`
	CountryCode  string            `json:"country_code"`
	Capabilities core.Capabilities `json:"capabilities"`
	Provider     string            `json:"provider"`
	CreatedDT    apiTime           `json:"created_dt"`
}

func viewPhone(p core.PhoneNumber) phoneView {
	return phoneView{ID: p.ID, Number: p.Number, Identity: p.IdentityID, CountryCode: p.CountryCode, Capabilities: p.Capabilities,
		Provider: p.Provider, CreatedDT: apiTime(p.CreatedAt)}
}

type smsView struct {
	ID             int64   `json:"id"`
	Identity       string  `json:"identity"`
	PhoneNumber    string  `json:"phone_number"`
	FromNumber     string  `json:"from_number"`
	ToNumber       string  `json:"to_number"`
	Body           string  `json:"body"`
	Direction      string  `json:"direction"`
	IsRead         bool    `json:"is_read"`
	Status         string  `json:"status"`
	Error          *string `json:"error"`
	ConversationID string  `json:"conversation_id"`
	ProviderSID    *string `json:"provider_sid"`
	// Attachments are an MMS's media, kept at the provider: URL and type.
	Attachments  []core.SMSMedia   `json:"attachments"`
	Verification *verificationView `json:"verification"`
	Blocked      bool              `json:"blocked"`
	// Highlights are a search hit's snippets; empty outside a search (q).
	Highlights []string `json:"highlights"`
	CreatedDT  apiTime  `json:"created_dt"`
}

func viewSMS(m core.SMSMessage) smsView {
	media := m.Media
	if media == nil {
		media = []core.SMSMedia{}
	}
	return smsView{ID: m.ID, Identity: m.IdentityID, PhoneNumber: m.PhoneNumber, FromNumber: m.FromNumber, ToNumber: m.ToNumber,
		Body: m.Body, Direction: string(m.Direction), IsRead: m.IsRead, Status: string(m.Status), Error: optString(m.Error),
		ConversationID: core.ConversationID(m.PhoneID, m.Counterpart()), ProviderSID: optString(m.ProviderSID), Attachments: media,
		Verification: viewVerification(m.Verification), Blocked: m.Blocked, Highlights: nonNil(m.Highlights), CreatedDT: apiTime(m.CreatedAt)}
}

type conversationView struct {
	ConversationID string  `json:"conversation_id"`
	Identity       string  `json:"identity"`
	PhoneNumber    string  `json:"phone_number"`
	Counterpart    string  `json:"counterpart"`
	MessageCount   int     `json:"message_count"`
	UnreadCount    int     `json:"unread_count"`
	Preview        string  `json:"preview"`
	LastMessageDT  apiTime `json:"last_message_dt"`
}

func viewConversation(c core.Conversation) conversationView {
	return conversationView{ConversationID: c.ID, Identity: c.IdentityID, PhoneNumber: c.PhoneNumber, Counterpart: c.Counterpart,
		MessageCount: c.MessageCount, UnreadCount: c.UnreadCount, Preview: c.Preview, LastMessageDT: apiTime(c.LastMessageAt)}
}

type voiceAgentView struct {
	Identity     string   `json:"identity"`
	ResponseURL  *string  `json:"response_url"`
	Method       string   `json:"method"`
	Enabled      bool     `json:"enabled"`
	Mode         string   `json:"mode"`
	StreamURL    *string  `json:"stream_url"`
	RecordCalls  bool     `json:"record_calls"`
	StreamSecret *string  `json:"stream_secret"`
	UpdatedDT    *apiTime `json:"updated_dt"`
}

func viewVoiceAgent(v core.VoiceAgent) voiceAgentView {
	return voiceAgentView{Identity: v.IdentityID, ResponseURL: optString(v.ResponseURL), Method: v.Method, Enabled: v.Enabled,
		Mode: string(v.Mode), StreamURL: optString(v.StreamURL), RecordCalls: v.RecordCalls, StreamSecret: optString(v.StreamSecret),
		UpdatedDT: optTime(&v.UpdatedAt)}
}

func (s *server) provisionPhone(c *gin.Context) (int, any, error) {
	id, err := pathUUID(c, "uuid", "Identity")
	if err != nil {
		return 0, nil, err
	}
	in, err := readInput(c)
	if err != nil {
		return 0, nil, err
	}
	country := in.text("country_code")
	if err := in.err(); err != nil {
		return 0, nil, err
	}
	ident, err := s.app.Phone.Provision(c.Request.Context(), principal(c), id, country)
	return http.StatusOK, viewIdentity(ident), err
}

func (s *server) listPhones(c *gin.Context) (int, any, error) {
	q := newStrictQuery(c)
	identity := q.uuid("identity")
	lq := q.list()
	if err := q.err(); err != nil {
		return 0, nil, err
	}
	list, total, err := s.app.Phone.Phones(c.Request.Context(), principal(c), identity, lq.page)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, listed(s, c, lq, list, total, viewPhone), nil
}

func (s *server) getPhone(c *gin.Context) (int, any, error) {
	id, err := pathID(c, "id", "Phone number")
	if err != nil {
		return 0, nil, err
	}
	p, err := s.app.Phone.Get(c.Request.Context(), principal(c), id)
	return http.StatusOK, viewPhone(p), err
}

func (s *server) sendSMS(c *gin.Context) (int, any, error) {
	identity, err := identityParam(c)
	if err != nil {
		return 0, nil, err
	}
	in, err := readInput(c)
	if err != nil {
		return 0, nil, err
	}
	to, body := in.str("to"), in.str("body")
	if to == nil {
		in.problems.Add("to", "This field is required.")
	}
	if body == nil {
		in.problems.Add("body", "This field is required.")
	}
	if err := in.err(); err != nil {
		return 0, nil, err
	}
	m, err := s.app.SMS.Send(c.Request.Context(), principal(c), identity, *to, *body)
	return http.StatusCreated, viewSMS(m), err
}

func (s *server) listSMS(c *gin.Context) (int, any, error) {
	q := newStrictQuery(c)
	identity, isRead, includeBlocked := q.uuid("identity"), q.boolean("is_read"), q.boolean("include_blocked")
	search := q.search(core.SearchTexts)
	var dir core.Direction
	if d := q.str("direction"); d != "" {
		var ok bool
		if dir, ok = core.ParseDirection(d); !ok {
			q.problems.Add("direction", "%q is not a valid choice; use incoming or outgoing.", d)
		}
	}
	newest := q.unrankedOrdering(search, true)
	lq := q.list()
	if err := q.err(); err != nil {
		return 0, nil, err
	}
	list, total, err := s.app.SMS.List(c.Request.Context(), principal(c), identity, ports.SMSFilter{Direction: dir, IsRead: isRead,
		IncludeBlocked: includeBlocked != nil && *includeBlocked, Oldest: !newest, Search: search, Page: lq.page})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, listed(s, c, lq, list, total, viewSMS), nil
}

func (s *server) getSMS(c *gin.Context) (int, any, error) {
	id, err := pathID(c, "id", "Message")
	if err != nil {
		return 0, nil, err
	}
	m, err := s.app.SMS.Get(c.Request.Context(), principal(c), id)
	return http.StatusOK, viewSMS(m), err
}

func (s *server) listConversations(c *gin.Context) (int, any, error) {
	q := newStrictQuery(c)
	identity, hasUnread, phone := q.uuid("identity"), q.boolean("has_unread"), q.phone("phone")
	lq := q.list()
	if err := q.err(); err != nil {
		return 0, nil, err
	}
	list, total, err := s.app.SMS.Conversations(c.Request.Context(), principal(c), identity, hasUnread, phone, lq.page)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, listed(s, c, lq, list, total, viewConversation), nil
}

type conversationDetailView struct {
	conversationView
	Messages []smsView `json:"messages"`
}

func (s *server) getConversation(c *gin.Context) (int, any, error) {
	conv, msgs, err := s.app.SMS.Conversation(c.Request.Context(), principal(c), c.Param("id"))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, conversationDetailView{viewConversation(conv), viewAll(msgs, viewSMS)}, nil
}

func (s *server) getVoiceAgent(c *gin.Context) (int, any, error) {
	id, err := pathUUID(c, "uuid", "Identity")
	if err != nil {
		return 0, nil, err
	}
	v, err := s.app.Phone.VoiceAgent(c.Request.Context(), principal(c), id)
	return http.StatusOK, viewVoiceAgent(v), err
}

func (s *server) setVoiceAgent(replace bool) handler {
	return func(c *gin.Context) (int, any, error) {
		id, err := pathUUID(c, "uuid", "Identity")
		if err != nil {
			return 0, nil, err
		}
		in, err := readInputFor[voiceAgentView](c)
		if err != nil {
			return 0, nil, err
		}
		vi := app.VoiceAgentInput{ResponseURL: in.str("response_url"), Method: in.str("method"), Enabled: in.boolean("enabled"),
			Mode: in.str("mode"), StreamURL: in.str("stream_url"), RecordCalls: in.boolean("record_calls")}
		if err := in.err(); err != nil {
			return 0, nil, err
		}
		v, err := s.app.Phone.SetVoiceAgent(c.Request.Context(), principal(c), id, vi, replace)
		return http.StatusOK, viewVoiceAgent(v), err
	}
}

// emptyTwiML is the answer to an inbound message: nothing to send back.
const emptyTwiML = `<?xml version="1.0" encoding="UTF-8"?><Response/>`

// providerWebhook reads a signed form POST from the provider. The signature
// covers the public URL it called, so that URL is built from the base URL
// configured, never from the Host header. It covers form parameters only,
// so no other body is read.
func (s *server) providerWebhook(c *gin.Context) (*input, error) {
	const form = "application/x-www-form-urlencoded"
	if mediaType, _, _ := mime.ParseMediaType(c.GetHeader("Content-Type")); mediaType != form {
		return nil, &statusError{http.StatusUnsupportedMediaType, "Provider webhooks take " + form + " bodies only."}
	}
	in, err := readOpenInput(c)
	if err != nil {
		return nil, err
	}
	return in, s.app.SMS.VerifyProviderRequest(s.baseURL+c.Request.URL.RequestURI(), in.form, c.GetHeader("X-Twilio-Signature"))
}

// inboundSMSWebhook takes an inbound message from Twilio.
func (s *server) inboundSMSWebhook(c *gin.Context) {
	in, err := s.providerWebhook(c)
	if err == nil {
		_, err = s.app.SMS.Receive(c.Request.Context(), twilioInboundSMS(in))
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	c.Data(http.StatusOK, "text/xml; charset=utf-8", []byte(emptyTwiML))
}

// twilioInboundSMS reads the fields of Twilio's inbound message webhook,
// which the simulator's takes too: From, To, Body, MessageSid and an MMS's
// media.
func twilioInboundSMS(in *input) app.InboundSMS {
	return app.InboundSMS{From: in.text("From"), To: in.text("To"), Body: in.text("Body"), SID: in.text("MessageSid"),
		Media: twilioMedia(in)}
}

// twilioMedia reads an MMS's media from Twilio's fields: NumMedia, then
// MediaUrl{N} and MediaContentType{N} from 0.
func twilioMedia(in *input) []core.SMSMedia {
	n, err := strconv.Atoi(in.text("NumMedia"))
	if err != nil || n <= 0 {
		return nil
	}
	media := make([]core.SMSMedia, 0, min(n, core.MaxSMSMedia))
	for i := range min(n, core.MaxSMSMedia) {
		media = append(media, core.SMSMedia{URL: in.text(fmt.Sprintf("MediaUrl%d", i)), ContentType: in.text(fmt.Sprintf("MediaContentType%d", i))})
	}
	return media
}

// statusWebhook takes a delivery report from Twilio.
func (s *server) statusWebhook(c *gin.Context) (int, any, error) {
	in, err := s.providerWebhook(c)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusNoContent, nil, s.app.SMS.StatusReport(c.Request.Context(), in.text("MessageSid"),
		in.text("MessageStatus"), in.text("ErrorCode"), in.text("ErrorMessage"))
}

// simulatedSMS injects an inbound message through the simulator.
func (s *server) simulatedSMS(c *gin.Context) (int, any, error) {
	in, err := readInput(c)
	if err != nil {
		return 0, nil, err
	}
	sms := twilioInboundSMS(in)
	if err := in.err(); err != nil {
		return 0, nil, err
	}
	m, err := s.app.SMS.Simulate(c.Request.Context(), principal(c), sms)
	return http.StatusCreated, viewSMS(m), err
}

func (s *server) deleteSMS(c *gin.Context) (int, any, error) {
	id, err := pathID(c, "id", "Message")
	if err != nil {
		return 0, nil, err
	}
	return http.StatusNoContent, nil, s.app.SMS.Delete(c.Request.Context(), principal(c), id)
}
