package mcpserver

import (
	"context"
	"mime"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/callsign/callsign/client"
)

// emailSummary is a message in a list: enough to choose which to read.
type emailSummary struct {
	ID              int64    `json:"id"`
	ThreadID        string   `json:"thread_id"`
	FromEmail       string   `json:"from_email"`
	FromDisplayName *string  `json:"from_display_name"`
	ToEmail         string   `json:"to_email"`
	Subject         string   `json:"subject"`
	Preview         string   `json:"preview" jsonschema:"the start of the text body, on one line (read_email has the whole)"`
	Direction       string   `json:"direction" jsonschema:"incoming (received) or outgoing (sent)"`
	IsRead          bool     `json:"is_read"`
	Attachments     []string `json:"attachments" jsonschema:"the attachments' file names"`
	Labels          []string `json:"labels" jsonschema:"your labels on it (add_label, remove_label)"`
	Highlights      []string `json:"highlights,omitempty" jsonschema:"for a search: snippets with the matched words in <mark>…</mark>"`
	// Verification is here too so that a list shows a code without a read.
	Verification *client.Verification `json:"verification" jsonschema:"received mail: the one-time code and sign-in link it carries; null when none"`
	CreatedDT    string               `json:"created_dt"`
}

func summarize(m client.MessageSummary) emailSummary {
	names := make([]string, len(m.Attachments))
	for i, a := range m.Attachments {
		names[i] = a.Filename
	}
	return emailSummary{ID: m.ID, ThreadID: m.ThreadID, FromEmail: m.FromEmail, FromDisplayName: m.FromDisplayName, ToEmail: m.ToEmail,
		Subject: m.Subject, Preview: m.Preview, Direction: m.Direction, IsRead: m.IsRead, Attachments: names, Labels: labelsOrEmpty(m.Labels),
		Highlights: m.Highlights, Verification: m.Verification, CreatedDT: m.CreatedDT}
}

// email is a message to read: its text and what is known about it.
type email struct {
	ID              int64                  `json:"id"`
	ThreadID        string                 `json:"thread_id"`
	MessageID       string                 `json:"message_id" jsonschema:"the Message-ID header, without angle brackets"`
	InReplyTo       *string                `json:"in_reply_to"`
	FromEmail       string                 `json:"from_email"`
	FromDisplayName *string                `json:"from_display_name"`
	ToEmail         string                 `json:"to_email"`
	Cc              []string               `json:"cc"`
	Subject         string                 `json:"subject"`
	ExtractedText   *string                `json:"extracted_text,omitempty" jsonschema:"read_email: the new text of the message, without the quoted history and a marked signature"`
	Text            string                 `json:"text,omitempty" jsonschema:"the body as plain text (HTML-only mail is converted to readable text); read_email gives it with full: true"`
	Truncated       bool                   `json:"truncated" jsonschema:"whether text holds only the start of a very long body"`
	HasHTML         bool                   `json:"has_html" jsonschema:"whether the message also has an HTML body"`
	Direction       string                 `json:"direction" jsonschema:"incoming (received) or outgoing (sent)"`
	IsRead          bool                   `json:"is_read"`
	Attachments     []client.Attachment    `json:"attachments" jsonschema:"files: get_attachment reads one"`
	Labels          []string               `json:"labels" jsonschema:"your labels on it (add_label, remove_label)"`
	DeliveryStatus  *string                `json:"delivery_status" jsonschema:"sent mail: queued, sent, failed or bounced; null for received mail"`
	DeliveryError   *string                `json:"delivery_error"`
	Authentication  *client.Authentication `json:"authentication" jsonschema:"received mail: SPF, DKIM and DMARC results; verdict pass means the sender is who it claims"`
	Verification    *client.Verification   `json:"verification" jsonschema:"received mail: the one-time code and sign-in link it carries (kind code, link or both); null when none"`
	CreatedDT       string                 `json:"created_dt"`
}

func readable(m client.Message) email {
	return email{ID: m.ID, ThreadID: m.ThreadID, MessageID: m.MessageID, InReplyTo: m.InReplyTo, FromEmail: m.FromEmail,
		FromDisplayName: m.FromDisplayName, ToEmail: m.ToEmail, Cc: m.Cc, Subject: m.Subject, Text: m.Content, Truncated: m.Truncated, HasHTML: m.HTML != "",
		Direction: m.Direction, IsRead: m.IsRead, Attachments: m.Attachments, Labels: labelsOrEmpty(m.Labels), DeliveryStatus: m.DeliveryStatus,
		DeliveryError: m.DeliveryError, Authentication: m.Authentication, Verification: m.Verification, CreatedDT: m.CreatedDT}
}

type listEmailsIn struct {
	Scope
	Query         string   `json:"query,omitempty" jsonschema:"search words (all must match, stemmed), \"exact phrase\", -word, from:, to:, subject:, filename:, has:attachment, is:unread, before:/after: YYYY-MM-DD; hits come most relevant first"`
	IsRead        *bool    `json:"is_read,omitempty" jsonschema:"true for read messages only, false for unread only"`
	FromEmail     string   `json:"from_email,omitempty" jsonschema:"only messages from this address (ignoring case)"`
	Direction     string   `json:"direction,omitempty" jsonschema:"incoming (received) or outgoing (sent)"`
	ThreadID      string   `json:"thread_id,omitempty" jsonschema:"only messages of this thread"`
	Inbox         int64    `json:"inbox,omitempty" jsonschema:"only messages of this inbox (an id)"`
	Authenticated *bool    `json:"authenticated,omitempty" jsonschema:"true for received mail whose sender passed SPF/DKIM/DMARC"`
	CreatedAfter  string   `json:"created_after,omitempty" jsonschema:"only messages stored after this time (a created_dt seen before)"`
	Labels        []string `json:"labels,omitempty" jsonschema:"only messages carrying every one of these labels"`
	ExcludeLabels []string `json:"exclude_labels,omitempty" jsonschema:"only messages carrying none of these labels"`
	Ordering      string   `json:"ordering,omitempty" jsonschema:"-created_dt (the default without query): newest first; created_dt: oldest first; with query, either orders the hits by time instead of relevance"`
	Limit         int      `json:"limit,omitempty" jsonschema:"how many messages (default 50, at most 200)"`
	Offset        int      `json:"offset,omitempty" jsonschema:"how many to skip, for the next page"`
}

type listEmailsOut struct {
	Count  int            `json:"count" jsonschema:"how many messages match in all"`
	Emails []emailSummary `json:"emails" jsonschema:"newest first, or as ordering says; for a search most relevant first"`
}

type messageIn struct {
	Scope
	MessageID int64 `json:"message_id" jsonschema:"the message's id, as list_emails shows it"`
}

type readEmailIn struct {
	messageIn
	Full bool `json:"full,omitempty" jsonschema:"true for the whole text body as well, quoted history included"`
}

type sendEmailIn struct {
	Scope
	To      []string `json:"to" jsonschema:"recipient addresses"`
	Cc      []string `json:"cc,omitempty"`
	Bcc     []string `json:"bcc,omitempty"`
	Subject string   `json:"subject,omitempty"`
	Body    string   `json:"body" jsonschema:"the message as plain text"`
	HTML    string   `json:"html,omitempty" jsonschema:"an optional HTML version of the body"`
}

type draftEmailIn struct {
	Scope
	To        []string `json:"to,omitempty" jsonschema:"recipient addresses (a reply's follow the message it answers)"`
	Cc        []string `json:"cc,omitempty"`
	Bcc       []string `json:"bcc,omitempty"`
	Subject   string   `json:"subject,omitempty"`
	Body      string   `json:"body" jsonschema:"the message as plain text"`
	HTML      string   `json:"html,omitempty" jsonschema:"an optional HTML version of the body"`
	SendAt    string   `json:"send_at,omitempty" jsonschema:"when the message is to leave once approved (RFC 3339, in the future); empty: at once"`
	ReplyTo   int64    `json:"reply_to,omitempty" jsonschema:"draft a reply to this message (to and subject then follow it)"`
	ReplyAll  bool     `json:"reply_all,omitempty" jsonschema:"with reply_to: a reply to everyone"`
	ForwardOf int64    `json:"forward_of,omitempty" jsonschema:"draft a forward of this message, with its attachments"`
}

type replyEmailIn struct {
	Scope
	MessageID int64    `json:"message_id" jsonschema:"the message to answer"`
	Body      string   `json:"body" jsonschema:"the reply as plain text; the subject and threading headers are set for you"`
	HTML      string   `json:"html,omitempty" jsonschema:"an optional HTML version of the body"`
	ReplyAll  bool     `json:"reply_all,omitempty" jsonschema:"also answer everyone else the message was sent to"`
	Cc        []string `json:"cc,omitempty"`
	Bcc       []string `json:"bcc,omitempty"`
}

type forwardEmailIn struct {
	Scope
	MessageID int64    `json:"message_id" jsonschema:"the message to forward, with its attachments"`
	To        []string `json:"to" jsonschema:"recipient addresses"`
	Body      string   `json:"body,omitempty" jsonschema:"a note above the forwarded message"`
	Cc        []string `json:"cc,omitempty"`
	Bcc       []string `json:"bcc,omitempty"`
}

type markReadIn struct {
	Scope
	MessageID int64 `json:"message_id"`
	IsRead    *bool `json:"is_read,omitempty" jsonschema:"false marks it unread again (default true)"`
}

type listThreadsIn struct {
	Scope
	HasUnread     *bool    `json:"has_unread,omitempty" jsonschema:"true for threads with unread mail only"`
	Inbox         int64    `json:"inbox,omitempty" jsonschema:"only threads of this inbox (an id)"`
	Labels        []string `json:"labels,omitempty" jsonschema:"only threads whose messages carry every one of these labels"`
	ExcludeLabels []string `json:"exclude_labels,omitempty" jsonschema:"only threads none of whose messages carries one of these labels"`
}

type listThreadsOut struct {
	Threads []client.Thread `json:"threads" jsonschema:"latest activity first"`
}

type threadIn struct {
	Scope
	ThreadID string `json:"thread_id" jsonschema:"the thread's id, as list_threads or a message shows it"`
}

type threadOut struct {
	ThreadID string  `json:"thread_id"`
	Subject  string  `json:"subject"`
	Messages []email `json:"messages" jsonschema:"oldest first"`
	// Omitted counts the oldest messages left out to keep the answer small.
	Omitted int `json:"omitted" jsonschema:"how many older messages were left out to keep the answer small (list_emails with thread_id and read_email reach them)"`
}

// threadTextBudget bounds the text read_thread returns: the newest
// messages are read, one at a time, while their bodies fit.
const threadTextBudget = 1 << 20

type waitEmailIn struct {
	Scope
	From            string `json:"from,omitempty" jsonschema:"wait for mail from this address, or from any address at this domain (example.com)"`
	SubjectContains string `json:"subject_contains,omitempty" jsonschema:"wait for a subject containing this text (ignoring case)"`
	TimeoutSeconds  int    `json:"timeout_seconds,omitempty" jsonschema:"how long to wait, 1 to 60 seconds (default 30)"`
}

type waitEmailOut struct {
	Message *email `json:"message" jsonschema:"the message that arrived, or null when none did in time"`
}

type attachmentIn struct {
	Scope
	MessageID int64  `json:"message_id" jsonschema:"the message the file belongs to"`
	UUID      string `json:"uuid" jsonschema:"the attachment's uuid (or its file name), as read_email lists it"`
}

type attachmentOut struct {
	client.Attachment
	Text      *string `json:"text" jsonschema:"the content of a text file; null for other types (download them from url with the API key)"`
	Truncated bool    `json:"truncated" jsonschema:"whether text holds only the start of the file"`
}

// maxAttachmentText bounds the text of an attachment a tool returns.
const maxAttachmentText = 256 << 10

func (s *session) addMailTools() {
	addTool(s, tool{name: "list_emails", title: "List emails", readOnly: true,
		description: "List email messages (newest first, 50 at a time) with a short preview and the verification code or link of each; filter by read state, sender, direction or thread, or search them (query), most relevant first. Use read_email for a message's full text."},
		func(ctx context.Context, c *client.Client, in listEmailsIn) (listEmailsOut, error) {
			ordering := in.Ordering
			if ordering == "" && in.Query == "" {
				ordering = newestFirst
			}
			p, err := c.Messages(ctx, client.MessageFilter{Query: in.Query, Inbox: in.Inbox, ThreadID: in.ThreadID, FromEmail: in.FromEmail, Direction: in.Direction,
				IsRead: in.IsRead, Authenticated: in.Authenticated, CreatedAfter: in.CreatedAfter, Ordering: ordering,
				Labels: in.Labels, ExcludeLabels: in.ExcludeLabels, Limit: in.Limit, Offset: in.Offset})
			out := listEmailsOut{Count: p.Count, Emails: make([]emailSummary, len(p.Results))}
			for i, m := range p.Results {
				out.Emails[i] = summarize(m)
			}
			return out, err
		})
	addTool(s, tool{name: "read_email", title: "Read an email", readOnly: true,
		description: "Read one email message: its new text (extracted_text: without the quoted history and signature; full: true adds the whole text body), sender, recipients, authentication results, attachments, and the verification code or sign-in link it carries."},
		func(ctx context.Context, c *client.Client, in readEmailIn) (email, error) {
			m, err := c.Message(ctx, in.MessageID)
			e := readable(m)
			e.ExtractedText = &m.ExtractedText
			if !in.Full {
				e.Text = ""
			}
			return e, err
		})
	addTool(s, tool{name: "send_email", title: "Send an email", outward: true,
		description: "Send a new email message from this identity's inbox. To answer a message, use reply_email instead, which keeps the thread."},
		func(ctx context.Context, c *client.Client, in sendEmailIn) (email, error) {
			m, err := c.Compose(ctx, client.Draft{To: in.To, Cc: in.Cc, Bcc: in.Bcc, Subject: &in.Subject, Content: &in.Body, HTML: optional(in.HTML)})
			return readable(m), err
		})
	addTool(s, tool{name: "draft_email", title: "Draft an email",
		description: "Keep an email unsent for a person to approve: a new message, or with reply_to or forward_of a reply or forward. A key that may not send (send_email answers 403) drafts this way; its drafts wait until a person sends them, at send_at if given."},
		func(ctx context.Context, c *client.Client, in draftEmailIn) (client.EmailDraft, error) {
			d := client.Draft{To: in.To, Cc: in.Cc, Bcc: in.Bcc, Subject: optional(in.Subject), Content: &in.Body, HTML: optional(in.HTML)}
			return c.CreateDraft(ctx, client.NewDraft{Draft: d, SendAt: in.SendAt, ReplyTo: in.ReplyTo, ReplyAll: in.ReplyAll, ForwardOf: in.ForwardOf})
		})
	addTool(s, tool{name: "reply_email", title: "Reply to an email", outward: true,
		description: "Reply to a message (its sender, or everyone with reply_all); the subject and threading headers are set for you."},
		func(ctx context.Context, c *client.Client, in replyEmailIn) (email, error) {
			kind := "reply"
			if in.ReplyAll {
				kind = "reply-all"
			}
			m, err := c.Respond(ctx, in.MessageID, kind, client.Draft{Cc: in.Cc, Bcc: in.Bcc, Content: &in.Body, HTML: optional(in.HTML)})
			return readable(m), err
		})
	addTool(s, tool{name: "forward_email", title: "Forward an email", outward: true,
		description: "Forward a message, with its attachments, to other addresses, with an optional note."},
		func(ctx context.Context, c *client.Client, in forwardEmailIn) (email, error) {
			m, err := c.Respond(ctx, in.MessageID, "forward", client.Draft{To: in.To, Cc: in.Cc, Bcc: in.Bcc, Content: &in.Body})
			return readable(m), err
		})
	addTool(s, tool{name: "mark_email_read", title: "Mark an email read", idempotent: true,
		description: "Mark a message read (or unread again with is_read: false)."},
		func(ctx context.Context, c *client.Client, in markReadIn) (emailSummary, error) {
			read := in.IsRead == nil || *in.IsRead
			m, err := c.SetRead(ctx, in.MessageID, read)
			return summarize(m.MessageSummary), err
		})
	addTool(s, tool{name: "list_threads", title: "List email threads", readOnly: true,
		description: "List email conversations (threads), latest activity first, with subject, participants, unread count and a preview of the latest message."},
		func(ctx context.Context, c *client.Client, in listThreadsIn) (listThreadsOut, error) {
			l, err := c.Threads(ctx, client.ThreadFilter{HasUnread: in.HasUnread, Inbox: in.Inbox,
				Labels: in.Labels, ExcludeLabels: in.ExcludeLabels})
			return listThreadsOut{Threads: l}, err
		})
	addTool(s, tool{name: "read_thread", title: "Read an email thread", readOnly: true,
		description: "Read an email conversation: the messages of the thread, oldest first, as text (in a very long thread the oldest are left out and counted in omitted)."},
		func(ctx context.Context, c *client.Client, in threadIn) (threadOut, error) {
			t, err := c.Thread(ctx, in.ThreadID)
			if err != nil {
				return threadOut{}, err
			}
			return readThread(ctx, c, t)
		})
	addTool(s, tool{name: "wait_for_email", title: "Wait for an email", readOnly: true,
		description: "Wait up to timeout_seconds (at most 60) for the next email to arrive, optionally from a sender or with a subject containing some text, and return it; message is null when none came in time. Use it for answers you expect (for a verification code, wait_for_code)."},
		s.waitForEmail)
	addTool(s, tool{name: "wait_for_code", title: "Wait for a verification code", readOnly: true,
		description: "Get the one-time code or sign-in link that just arrived by email or text (mail and texts together), waiting up to timeout_seconds (at most 60) for one when none has; optionally only from a sender (from) or by one source (email or sms). Codes from the last 10 minutes count unless after says otherwise. verification is null when none came in time."},
		waitForCode)
	addTool(s, tool{name: "get_attachment", title: "Get an attachment", readOnly: true,
		description: "Read an attachment of a message: the content of a text file (up to 256 KiB), or the metadata and download URL of any other file."},
		func(ctx context.Context, c *client.Client, in attachmentIn) (attachmentOut, error) {
			m, err := c.Message(ctx, in.MessageID)
			if err != nil {
				return attachmentOut{}, err
			}
			a, err := m.Attachment(in.UUID)
			if err != nil || !isText(a.ContentType) {
				return attachmentOut{Attachment: a}, err
			}
			content, truncated, err := c.Download(ctx, a, maxAttachmentText)
			if err != nil || !utf8.Valid(content) && !truncated {
				return attachmentOut{Attachment: a}, err
			}
			text := strings.ToValidUTF8(string(content), "")
			return attachmentOut{Attachment: a, Text: &text, Truncated: truncated}, nil
		})
}

// readThread reads the bodies of a thread's messages, newest first, one
// request each, until threadTextBudget is spent; the older rest is counted
// in Omitted. The detail itself carries no bodies.
func readThread(ctx context.Context, c *client.Client, t client.ThreadDetail) (threadOut, error) {
	out := threadOut{ThreadID: t.ThreadID, Subject: t.Subject}
	spent, first := 0, len(t.Messages)
	for first > 0 {
		m, err := c.Message(ctx, t.Messages[first-1].ID)
		if err != nil {
			return threadOut{}, err
		}
		if spent += len(m.Content); spent > threadTextBudget && first < len(t.Messages) {
			break
		}
		first--
		out.Messages = append(out.Messages, readable(m))
	}
	slices.Reverse(out.Messages)
	out.Omitted = first
	return out, nil
}

// isText reports whether a content type is text a model can read.
func isText(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	switch {
	case strings.HasPrefix(mt, "text/"), strings.HasSuffix(mt, "+json"), strings.HasSuffix(mt, "+xml"):
		return true
	}
	switch mt {
	case "application/json", "application/xml", "application/csv", "application/yaml", "application/x-yaml", "application/javascript", "message/rfc822":
		return true
	}
	return false
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// waitTimeout reads timeout_seconds: 30 by default, at most 60.
func waitTimeout(seconds int) time.Duration {
	switch {
	case seconds <= 0:
		return 30 * time.Second
	case seconds > 60:
		return 60 * time.Second
	}
	return time.Duration(seconds) * time.Second
}

// waitForEmail waits for the next received message that matches.
func (s *session) waitForEmail(ctx context.Context, c *client.Client, in waitEmailIn) (waitEmailOut, error) {
	ctx, cancel := context.WithTimeout(ctx, waitTimeout(in.TimeoutSeconds))
	defer cancel()
	changed, stop, err := s.signals.Mail(ctx, c)
	if err != nil {
		return waitEmailOut{}, err
	}
	defer stop()
	m, err := c.WaitForMessage(ctx, client.MailWait{From: in.From, SubjectContains: in.SubjectContains}, changed)
	if m == nil || err != nil {
		return waitEmailOut{}, err
	}
	e := readable(*m)
	return waitEmailOut{Message: &e}, nil
}
