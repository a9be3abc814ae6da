package client

import (
	"context"
	"net/url"
	"strconv"
)

// SendSMS texts body to the number to (E.164) from the identity's number.
func (c *Client) SendSMS(ctx context.Context, to, body string) (SMS, error) {
	var m SMS
	return m, c.call(ctx, "POST", "/api/messages/send/", c.scoped(nil), map[string]string{"to": to, "body": body}, &m)
}

// SMSFilter narrows the text message list; zero fields do not filter.
type SMSFilter struct {
	Direction string
	IsRead    *bool
	// Query is a search (q): see docs/api.md, "Search".
	Query string
	// Ordering is created_dt (oldest first) or -created_dt; empty is the
	// API's newest first. A search is ordered by relevance alone.
	Ordering string
	Limit    int // 1-200; 0 is the API's 50
	Offset   int
}

// SMSMessages is a page of text messages: newest first by default, or
// with a Query most relevant first.
func (c *Client) SMSMessages(ctx context.Context, f SMSFilter) (Page[SMS], error) {
	q := pageQuery(f.Limit, f.Offset)
	if f.Ordering != "" {
		q.Set("ordering", f.Ordering)
	}
	if f.Direction != "" {
		q.Set("direction", f.Direction)
	}
	if f.IsRead != nil {
		q.Set("is_read", strconv.FormatBool(*f.IsRead))
	}
	if f.Query != "" {
		q.Set("q", f.Query)
	}
	var p Page[SMS]
	return p, c.call(ctx, "GET", "/api/messages/", c.scoped(q), nil, &p)
}

// pageQuery asks a list for a page (its envelope): an offset, even 0, is
// what makes the API page.
func pageQuery(limit, offset int) url.Values {
	q := url.Values{"offset": {strconv.Itoa(offset)}}
	if limit != 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	return q
}

// Conversations lists conversation summaries, latest first.
func (c *Client) Conversations(ctx context.Context, hasUnread *bool) ([]Conversation, error) {
	q := url.Values{}
	if hasUnread != nil {
		q.Set("has_unread", strconv.FormatBool(*hasUnread))
	}
	var l []Conversation
	return l, c.call(ctx, "GET", "/api/sms-inbox/", c.scoped(q), nil, &l)
}

// Conversation is one conversation with its messages.
func (c *Client) Conversation(ctx context.Context, id string) (ConversationDetail, error) {
	var d ConversationDetail
	if err := c.call(ctx, "GET", "/api/sms-inbox/"+url.PathEscape(id)+"/", nil, nil, &d); err != nil {
		return ConversationDetail{}, err
	}
	return d, c.own(d.Identity, "Conversation")
}

// own checks, when the client acts for one identity, that an object is
// that identity's.
func (c *Client) own(identity, what string) error {
	if c.identity != "" && identity != c.identity {
		return notFound(what)
	}
	return nil
}

// VoiceAgent is where an identity's calls go.
func (c *Client) VoiceAgent(ctx context.Context, identity string) (VoiceAgent, error) {
	var v VoiceAgent
	return v, c.call(ctx, "GET", voiceAgentPath(identity), nil, nil, &v)
}

// VoiceAgentInput changes a voice agent; nil fields stay as they are.
type VoiceAgentInput struct {
	ResponseURL *string `json:"response_url,omitempty"`
	Method      *string `json:"method,omitempty"`
	Enabled     *bool   `json:"enabled,omitempty"`
}

// SetVoiceAgent changes what it is given (PATCH).
func (c *Client) SetVoiceAgent(ctx context.Context, identity string, in VoiceAgentInput) (VoiceAgent, error) {
	var v VoiceAgent
	return v, c.call(ctx, "PATCH", voiceAgentPath(identity), nil, in, &v)
}

func voiceAgentPath(identity string) string {
	return "/api/identities/" + url.PathEscape(identity) + "/voice-agent/"
}

// ProvisionPhone buys a number for the identity in a country (ISO code,
// "" for the API's default).
func (c *Client) ProvisionPhone(ctx context.Context, identity, country string) (Identity, error) {
	body := map[string]string{}
	if country != "" {
		body["country_code"] = country
	}
	var i Identity
	return i, c.call(ctx, "POST", "/api/identities/"+url.PathEscape(identity)+"/provision-phone/", nil, body, &i)
}

// PlaceCall calls a number from the identity's number.
func (c *Client) PlaceCall(ctx context.Context, call PlaceCall) (Call, error) {
	var out Call
	return out, c.call(ctx, "POST", "/api/calls/", c.scoped(nil), call, &out)
}

// Calls is a page of the identity's calls, newest first.
func (c *Client) Calls(ctx context.Context, limit, offset int) (Page[Call], error) {
	var p Page[Call]
	return p, c.call(ctx, "GET", "/api/calls/", c.scoped(pageQuery(limit, offset)), nil, &p)
}

// HangUp ends a call in progress.
func (c *Client) HangUp(ctx context.Context, id int64) (Call, error) {
	var out Call
	return out, c.call(ctx, "POST", "/api/calls/"+strconv.FormatInt(id, 10)+"/hangup/", c.scoped(nil), nil, &out)
}
