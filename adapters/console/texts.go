package console

import (
	"net/http"
	"net/url"

	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

type textsData struct {
	Conversations []core.Conversation
	Pager         pager
	To, Body      string
}

// textsPage lists an identity's conversations, latest first, with the
// form that sends a text.
func (c *console) textsPage(v *visit) error {
	ident, err := c.identity(v)
	if err != nil {
		return err
	}
	return c.showTexts(v, ident, textsData{}, nil)
}

func (c *console) showTexts(v *visit, ident core.Identity, data textsData, problem error) error {
	n := pageNumber(v.r)
	convs, _, err := c.app.SMS.Conversations(v.r.Context(), v.principal, ident.ID, nil, "",
		ports.Page{Limit: pageSize + 1, Offset: (n - 1) * pageSize})
	if err != nil {
		return err
	}
	data.Conversations, data.Pager = convs[:min(len(convs), pageSize)], openPager(v.r, n, len(convs) > pageSize)
	pv := view{Title: "Texts", Identity: &ident, Section: "texts", Data: data}
	c.render(v, c.withProblem(v, &pv, problem), "texts", pv)
	return nil
}

// sendText sends a text from the identity's number.
func (c *console) sendText(v *visit) error {
	ident, err := c.identity(v)
	if err != nil {
		return err
	}
	data := textsData{To: formValue(v, "to"), Body: v.r.PostFormValue("body")}
	m, err := c.app.SMS.Send(v.r.Context(), v.principal, ident.ID, data.To, data.Body)
	if err != nil {
		if v.r.PostFormValue("from") == "conversation" {
			return err
		}
		return c.showTexts(v, ident, data, err)
	}
	return redirect(v, conversationPath(core.ConversationID(m.PhoneID, m.Counterpart())))
}

func conversationPath(id string) string { return root + "conversations/" + url.PathEscape(id) + "/" }

type conversationData struct {
	Conversation core.Conversation
	Messages     []core.SMSMessage
}

// conversationPage shows the texts between the identity's number and one
// counterpart, oldest first, with a form to answer.
func (c *console) conversationPage(v *visit) error {
	conv, msgs, err := c.app.SMS.Conversation(v.r.Context(), v.principal, v.r.PathValue("id"))
	if err != nil {
		return err
	}
	ident, err := c.app.Identities.Get(v.r.Context(), v.principal, conv.IdentityID)
	if err != nil {
		return err
	}
	c.render(v, http.StatusOK, "conversation", view{Title: conv.Counterpart, Identity: &ident, Section: "texts",
		Data: conversationData{Conversation: conv, Messages: msgs}})
	return nil
}

// markConversationRead marks the conversation's unread texts read.
func (c *console) markConversationRead(v *visit) error {
	conv, msgs, err := c.app.SMS.Conversation(v.r.Context(), v.principal, v.r.PathValue("id"))
	if err != nil {
		return err
	}
	for _, m := range msgs {
		if core.CountsAsUnread(m.Direction, m.IsRead) {
			if _, err := c.app.SMS.SetRead(v.r.Context(), v.principal, m.ID, true); err != nil {
				return err
			}
		}
	}
	return redirect(v, conversationPath(conv.ID))
}

type phoneData struct {
	Voice   core.VoiceAgent
	Country string
	// Calls are the identity's latest calls, newest first.
	Calls []core.Call
}

// callsShown bounds the calls the phone page lists.
const callsShown = 20

// phonePage shows the identity's number (or the form that buys one) and
// where its calls go.
func (c *console) phonePage(v *visit) error {
	ident, err := c.identity(v)
	if err != nil {
		return err
	}
	return c.showPhone(v, ident, "US", nil, nil)
}

func (c *console) showPhone(v *visit, ident core.Identity, country string, voice *core.VoiceAgent, problem error) error {
	data := phoneData{Country: country}
	if voice != nil {
		data.Voice = *voice
	} else {
		var err error
		if data.Voice, err = c.app.Phone.VoiceAgent(v.r.Context(), v.principal, ident.ID); err != nil {
			return err
		}
	}
	calls, _, err := c.app.Calls.List(v.r.Context(), v.principal, ident.ID, nil, ports.Page{Limit: callsShown})
	if err != nil {
		return err
	}
	data.Calls = calls
	pv := view{Title: "Phone", Identity: &ident, Section: "phone", Data: data}
	c.render(v, c.withProblem(v, &pv, problem), "phone", pv)
	return nil
}

func (c *console) provisionPhone(v *visit) error {
	ident, err := c.identity(v)
	if err != nil {
		return err
	}
	country := formValue(v, "country_code")
	if _, err := c.app.Phone.Provision(v.r.Context(), v.principal, ident.ID, country); err != nil {
		return c.showPhone(v, ident, country, nil, err)
	}
	return redirect(v, identityPath(ident.ID)+"phone/")
}

func (c *console) setVoiceAgent(v *visit) error {
	ident, err := c.identity(v)
	if err != nil {
		return err
	}
	enabled, record := v.r.PostFormValue("enabled") != "", v.r.PostFormValue("record_calls") != ""
	in := app.VoiceAgentInput{ResponseURL: new(formValue(v, "response_url")), Method: new(formValue(v, "method")), Enabled: &enabled,
		Mode: new(formValue(v, "mode")), StreamURL: new(formValue(v, "stream_url")), RecordCalls: &record}
	if _, err := c.app.Phone.SetVoiceAgent(v.r.Context(), v.principal, ident.ID, in, true); err != nil {
		shown := core.VoiceAgent{ResponseURL: *in.ResponseURL, Method: *in.Method, Enabled: enabled, Mode: core.VoiceMode(*in.Mode),
			StreamURL: *in.StreamURL, RecordCalls: record}
		return c.showPhone(v, ident, "US", &shown, err)
	}
	return redirect(v, identityPath(ident.ID)+"phone/")
}
