package client

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net/textproto"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Whoami says who the key is.
func (c *Client) Whoami(ctx context.Context) (Whoami, error) {
	var w Whoami
	return w, c.call(ctx, "GET", "/api/health/whoami/", nil, nil, &w)
}

// ActingIdentity is the identity the client acts for: As's, else the
// identity key's own; "" for a management key used without As.
func (c *Client) ActingIdentity(ctx context.Context) (string, error) {
	if c.identity != "" {
		return c.identity, nil
	}
	w, err := c.Whoami(ctx)
	if err != nil || w.Identity == nil {
		return "", err
	}
	return *w.Identity, nil
}

// Identity is one identity.
func (c *Client) Identity(ctx context.Context, uuid string) (Identity, error) {
	var i Identity
	return i, c.call(ctx, "GET", "/api/identities/"+url.PathEscape(uuid)+"/", nil, nil, &i)
}

// Inboxes lists the inboxes in reach, newest first.
func (c *Client) Inboxes(ctx context.Context) ([]Inbox, error) {
	var l []Inbox
	return l, c.call(ctx, "GET", "/api/email/", c.scoped(nil), nil, &l)
}

// MessageFilter narrows the email message list; zero fields do not filter.
type MessageFilter struct {
	// Query is a search (q): see docs/api.md, "Search".
	Query     string
	Inbox     int64
	ThreadID  string
	FromEmail string
	Direction string // incoming or outgoing
	IsRead    *bool
	// Authenticated true keeps received mail whose verdict is pass.
	Authenticated *bool
	CreatedAfter  string // a created_dt seen before: only later messages
	// Ordering is created_dt (oldest first) or -created_dt (newest first,
	// a search in plain recency); empty is the API's default.
	Ordering string
	// Labels keeps messages carrying every one of them, ExcludeLabels
	// those carrying none of them.
	Labels, ExcludeLabels []string
	Limit                 int // 1-200; 0 is the API's 50
	Offset                int
	// ExactCount asks for the exact count; without it the page's count
	// stops past 10,000 matches.
	ExactCount bool
}

func (f MessageFilter) query() url.Values {
	q := url.Values{}
	set := func(k, v string) {
		if v != "" {
			q.Set(k, v)
		}
	}
	if f.Inbox != 0 {
		set("inbox", strconv.FormatInt(f.Inbox, 10))
	}
	set("q", f.Query)
	set("thread_id", f.ThreadID)
	set("from_email", f.FromEmail)
	set("direction", f.Direction)
	if f.IsRead != nil {
		set("is_read", strconv.FormatBool(*f.IsRead))
	}
	if f.Authenticated != nil {
		set("authenticated", strconv.FormatBool(*f.Authenticated))
	}
	set("created_after", f.CreatedAfter)
	set("ordering", f.Ordering)
	set("labels", strings.Join(f.Labels, ","))
	set("exclude_labels", strings.Join(f.ExcludeLabels, ","))
	if f.Limit != 0 {
		set("limit", strconv.Itoa(f.Limit))
	}
	if f.Offset != 0 {
		set("offset", strconv.Itoa(f.Offset))
	}
	if f.ExactCount {
		set("count", "exact")
	}
	return q
}

// Messages is a page of the email message list: oldest first by default,
// or with a Query most relevant first.
func (c *Client) Messages(ctx context.Context, f MessageFilter) (MessagePage, error) {
	var p MessagePage
	return p, c.call(ctx, "GET", "/api/email-messages/", c.scoped(f.query()), nil, &p)
}

// Message is one email message with its bodies.
func (c *Client) Message(ctx context.Context, id int64) (Message, error) {
	var m Message
	if err := c.call(ctx, "GET", messagePath(id), nil, nil, &m); err != nil {
		return Message{}, err
	}
	return m, c.ownInbox(ctx, m.Inbox, "Message")
}

// SetRead marks a message read or unread.
func (c *Client) SetRead(ctx context.Context, id int64, read bool) (Message, error) {
	if err := c.ownMessage(ctx, id); err != nil {
		return Message{}, err
	}
	var m Message
	return m, c.call(ctx, "PATCH", messagePath(id), nil, map[string]bool{"is_read": read}, &m)
}

// AddLabel puts a label on a message (idempotent) and returns the message
// with its labels; a message carries at most 20.
func (c *Client) AddLabel(ctx context.Context, id int64, label string) (Message, error) {
	if err := c.ownMessage(ctx, id); err != nil {
		return Message{}, err
	}
	var m Message
	return m, c.call(ctx, "PUT", labelPath(id, label), nil, nil, &m)
}

// RemoveLabel takes a label off a message (idempotent).
func (c *Client) RemoveLabel(ctx context.Context, id int64, label string) error {
	if err := c.ownMessage(ctx, id); err != nil {
		return err
	}
	return c.call(ctx, "DELETE", labelPath(id, label), nil, nil, nil)
}

func labelPath(id int64, label string) string {
	return messagePath(id) + "labels/" + url.PathEscape(label) + "/"
}

func messagePath(id int64) string { return "/api/email-messages/" + strconv.FormatInt(id, 10) + "/" }

// ownMessage checks, when the client acts for one identity, that a message
// is that identity's before it is changed or answered.
func (c *Client) ownMessage(ctx context.Context, id int64) error {
	if c.identity == "" {
		return nil
	}
	_, err := c.Message(ctx, id)
	return err
}

// ownInbox checks, when the client acts for one identity, that an inbox is
// that identity's: an object of another one is not found, as the API
// answers an identity key.
func (c *Client) ownInbox(ctx context.Context, inbox int64, what string) error {
	if c.identity == "" {
		return nil
	}
	inboxes, err := c.Inboxes(ctx)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(inboxes, func(in Inbox) bool { return in.ID == inbox }) {
		return notFound(what)
	}
	return nil
}

// Draft is a message to send: compose, reply and forward take it.
type Draft struct {
	To              []string `json:"to_email,omitempty"`
	Cc              []string `json:"cc,omitempty"`
	Bcc             []string `json:"bcc,omitempty"`
	Subject         *string  `json:"subject,omitempty"`
	Content         *string  `json:"content,omitempty"`
	HTML            *string  `json:"html,omitempty"`
	AttachmentUUIDs []string `json:"attachment_uuids,omitempty"`
}

// NewDraft is a message to keep unsent: a Draft, when it is to leave once
// sent, and for a reply or forward the message it answers.
type NewDraft struct {
	Draft
	SendAt    string `json:"send_at,omitempty"`
	ReplyTo   int64  `json:"reply_to,omitempty"`
	ReplyAll  bool   `json:"reply_all,omitempty"`
	ForwardOf int64  `json:"forward_of,omitempty"`
}

// CreateDraft keeps a message unsent (POST /api/email-drafts/); a key that
// may not send drafts this way, and a person approves.
func (c *Client) CreateDraft(ctx context.Context, d NewDraft) (EmailDraft, error) {
	var out EmailDraft
	return out, c.call(ctx, "POST", "/api/email-drafts/", c.scoped(nil), d, &out)
}

// Compose sends a new message from the identity's first inbox.
func (c *Client) Compose(ctx context.Context, d Draft) (Message, error) {
	var m Message
	return m, c.call(ctx, "POST", "/api/email-messages/compose/", c.scoped(nil), d, &m)
}

// Respond sends a reply ("reply"), a reply to all ("reply-all") or a
// forward ("forward") of message id.
func (c *Client) Respond(ctx context.Context, id int64, kind string, d Draft) (Message, error) {
	if err := c.ownMessage(ctx, id); err != nil {
		return Message{}, err
	}
	var m Message
	return m, c.call(ctx, "POST", messagePath(id)+kind+"/", nil, d, &m)
}

// ThreadFilter narrows the thread list.
type ThreadFilter struct {
	HasUnread *bool
	Inbox     int64
	// Query is a search (q): see docs/api.md, "Search".
	Query string
	// Labels keeps threads whose messages carry every one of them between
	// them, ExcludeLabels threads none of whose messages carries one.
	Labels, ExcludeLabels []string
}

// Threads lists thread summaries, latest activity first.
func (c *Client) Threads(ctx context.Context, f ThreadFilter) ([]Thread, error) {
	q := url.Values{}
	if f.HasUnread != nil {
		q.Set("has_unread", strconv.FormatBool(*f.HasUnread))
	}
	if f.Inbox != 0 {
		q.Set("inbox", strconv.FormatInt(f.Inbox, 10))
	}
	if f.Query != "" {
		q.Set("q", f.Query)
	}
	if len(f.Labels) > 0 {
		q.Set("labels", strings.Join(f.Labels, ","))
	}
	if len(f.ExcludeLabels) > 0 {
		q.Set("exclude_labels", strings.Join(f.ExcludeLabels, ","))
	}
	var l []Thread
	return l, c.call(ctx, "GET", "/api/email-inbox/", c.scoped(q), nil, &l)
}

// Thread is a thread with its messages.
func (c *Client) Thread(ctx context.Context, id string) (ThreadDetail, error) {
	var t ThreadDetail
	if err := c.call(ctx, "GET", "/api/email-inbox/"+url.PathEscape(id)+"/", nil, nil, &t); err != nil {
		return ThreadDetail{}, err
	}
	return t, c.ownInbox(ctx, t.Inbox, "Thread")
}

// Upload stores a file to attach to a message sent later.
func (c *Client) Upload(ctx context.Context, filename, contentType string, content []byte) (Attachment, error) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="file"; filename=%q`, filename))
	if contentType == "" {
		contentType = "application/octet-stream"
	}
	h.Set("Content-Type", contentType)
	part, err := mw.CreatePart(h)
	if err == nil {
		_, err = part.Write(content)
	}
	if err != nil || mw.Close() != nil {
		return Attachment{}, fmt.Errorf("building the upload of %s: %v", filename, err)
	}
	res, err := c.send(ctx, "POST", "/api/attachments/", c.scoped(nil), mw.FormDataContentType(), &buf)
	if err != nil {
		return Attachment{}, err
	}
	defer res.Body.Close()
	var a Attachment
	return a, decodeBody(res, &a)
}

// Download reads up to limit bytes of an attachment of a message the
// caller has already read; more is reported as truncated.
func (c *Client) Download(ctx context.Context, a Attachment, limit int64) (content []byte, truncated bool, err error) {
	res, err := c.send(ctx, "GET", "/api/attachments/"+url.PathEscape(a.UUID)+"/", nil, "", nil)
	if err != nil {
		return nil, false, err
	}
	defer res.Body.Close()
	content, err = io.ReadAll(io.LimitReader(res.Body, limit+1))
	if int64(len(content)) > limit {
		return content[:limit], true, err
	}
	return content, false, err
}

// Attachment finds a message's attachment by uuid or by file name.
func (m Message) Attachment(ref string) (Attachment, error) {
	for _, a := range m.Attachments {
		if a.UUID == ref || strings.EqualFold(a.Filename, ref) {
			return a, nil
		}
	}
	return Attachment{}, notFound("Attachment")
}

// Identities is a page of the identities in reach, oldest first: a
// management key's account, an identity key's own, or the one As names.
func (c *Client) Identities(ctx context.Context, limit, offset int) (Page[Identity], error) {
	var p Page[Identity]
	return p, c.call(ctx, "GET", "/api/identities/", c.scoped(pageQuery(limit, offset)), nil, &p)
}
