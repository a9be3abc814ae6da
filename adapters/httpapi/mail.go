package httpapi

import (
	"context"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

type inboxView struct {
	ID        int64   `json:"id"`
	UUID      string  `json:"uuid"`
	Email     string  `json:"email"`
	Identity  string  `json:"identity"`
	CreatedDT apiTime `json:"created_dt"`
}

func viewInbox(in core.Inbox) inboxView {
	return inboxView{ID: in.ID, UUID: in.UUID, Email: in.Email, Identity: in.IdentityID, CreatedDT: apiTime(in.CreatedAt)}
}

type threadView struct {
	ThreadID        string   `json:"thread_id"`
	Inbox           int64    `json:"inbox"`
	Subject         string   `json:"subject"`
	Preview         string   `json:"preview"`
	MessageCount    int      `json:"message_count"`
	UnreadCount     int      `json:"unread_count"`
	AttachmentNames []string `json:"attachment_names"`
	Participants    []string `json:"participants"`
	// Labels are the union of the thread's messages' labels.
	Labels []string `json:"labels"`
	// Highlights are, for a search, the snippets of the thread's newest
	// matching message; empty outside a search (q).
	Highlights    []string `json:"highlights"`
	LastMessageDT apiTime  `json:"last_message_dt"`
}

func viewThread(t core.Thread) threadView {
	return threadView{ThreadID: t.ID, Inbox: t.InboxID, Subject: t.Subject, Preview: t.Preview, MessageCount: t.MessageCount,
		UnreadCount: t.UnreadCount, AttachmentNames: nonNil(t.AttachmentNames), Participants: nonNil(t.Participants),
		Labels: nonNil(t.Labels), Highlights: nonNil(t.Highlights), LastMessageDT: apiTime(t.LastMessageAt)}
}

type attachmentView struct {
	UUID        string `json:"uuid"`
	Filename    string `json:"filename"`
	ContentType string `json:"content_type"`
	Size        int64  `json:"size"`
	URL         string `json:"url"`
}

// messageSummaryView is a message as lists show it: everything but the
// bodies, with a preview of the text. A page of them costs memory bounded
// by its length, whatever the messages hold.
type messageSummaryView struct {
	ID              int64             `json:"id"`
	URL             string            `json:"url"`
	Inbox           int64             `json:"inbox"`
	ThreadID        string            `json:"thread_id"`
	MessageID       string            `json:"message_id"`
	InReplyTo       *string           `json:"in_reply_to"`
	FromEmail       string            `json:"from_email"`
	FromDisplayName *string           `json:"from_display_name"`
	ToEmail         string            `json:"to_email"`
	Cc              []string          `json:"cc"`
	Bcc             []string          `json:"bcc"`
	Subject         string            `json:"subject"`
	Preview         string            `json:"preview"`
	Truncated       bool              `json:"truncated"`
	Direction       string            `json:"direction"`
	IsRead          bool              `json:"is_read"`
	Attachments     []attachmentView  `json:"attachments"`
	DeliveryStatus  *string           `json:"delivery_status"`
	DeliveryError   *string           `json:"delivery_error"`
	Recipients      []recipientView   `json:"recipients"`
	Authentication  *authView         `json:"authentication"`
	Verification    *verificationView `json:"verification"`
	Labels          []string          `json:"labels"`
	// Highlights are a search hit's snippets; empty outside a search (q).
	Highlights []string `json:"highlights"`
	Blocked    bool     `json:"blocked"`
	// Spam is rspamd's verdict, null when none was asked for or it did
	// not answer; IsSpam says the message is filed as spam.
	Spam      *spamView `json:"spam"`
	IsSpam    bool      `json:"is_spam"`
	CreatedDT apiTime   `json:"created_dt"`
}

type spamView struct {
	Score   float64          `json:"score"`
	Action  string           `json:"action"`
	Symbols []spamSymbolView `json:"symbols"`
}

type spamSymbolView struct {
	Name  string  `json:"name"`
	Score float64 `json:"score"`
}

func viewSpam(v *core.SpamVerdict) *spamView {
	if v == nil {
		return nil
	}
	out := &spamView{Score: v.Score, Action: string(v.Action), Symbols: make([]spamSymbolView, len(v.Symbols))}
	for i, sym := range v.Symbols {
		out.Symbols[i] = spamSymbolView(sym)
	}
	return out
}

// messageView is one message with its stored bodies, each at most
// core.MaxStoredBody bytes (truncated says when one was cut), and their
// new content without the quoted history (core.ExtractReply), computed
// as it is read: nothing is stored and receiving costs nothing more.
type messageView struct {
	messageSummaryView
	Content       string `json:"content"`
	HTML          string `json:"html"`
	ExtractedText string `json:"extracted_text"`
	ExtractedHTML string `json:"extracted_html"`
}

type recipientView struct {
	Email  string  `json:"email"`
	Status string  `json:"status"`
	Error  *string `json:"error"`
	// ProviderID is the mail provider's id of the accepted message.
	ProviderID *string `json:"provider_id"`
}

type authView struct {
	SPF         string  `json:"spf"`
	DKIM        string  `json:"dkim"`
	DMARC       string  `json:"dmarc"`
	Verdict     string  `json:"verdict"`
	DMARCPolicy *string `json:"dmarc_policy"`
	// CheckedBy is "callsign" for our own checks, else the mail provider
	// whose verdicts these are.
	CheckedBy string `json:"checked_by"`
}

func viewRecipient(r core.Recipient) recipientView {
	return recipientView{Email: r.Email, Status: string(r.Status), Error: optString(r.Error), ProviderID: optString(r.ProviderID)}
}

func viewAuthentication(a *core.Authentication) *authView {
	if a == nil {
		return nil
	}
	v := &authView{SPF: string(a.SPF), DKIM: string(a.DKIM), DMARC: string(a.DMARC), Verdict: string(a.Verdict), DMARCPolicy: optString(string(a.Policy)),
		CheckedBy: a.CheckedBy}
	if v.CheckedBy == "" {
		v.CheckedBy = core.CheckedByUs
	}
	return v
}

func nonNil(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}

func (s *server) viewAttachment(a core.Attachment) attachmentView {
	return attachmentView{UUID: a.ID, Filename: a.Filename, ContentType: a.ContentType, Size: a.Size, URL: s.baseURL + "/api/attachments/" + a.ID + "/"}
}

func (s *server) viewMessage(m core.EmailMessage) messageView {
	reply := core.ExtractReply(m.Text, m.HTML)
	return messageView{messageSummaryView: s.viewSummary(m.Summary()), Content: m.Text, HTML: m.HTML,
		ExtractedText: reply.Text, ExtractedHTML: reply.HTML}
}

// viewSummary shows a message as lists do; m comes from a list
// (core.EmailMessage.Summary), or carries its preview.
func (s *server) viewSummary(m core.EmailMessage) messageSummaryView {
	v := messageSummaryView{ID: m.ID, URL: s.baseURL + "/api/email-messages/" + strconv.FormatInt(m.ID, 10) + "/", Inbox: m.InboxID, ThreadID: m.ThreadID,
		MessageID: m.MessageID, InReplyTo: optString(m.InReplyTo), FromEmail: m.FromEmail, FromDisplayName: optString(m.FromName),
		ToEmail: strings.Join(m.To, ", "), Cc: nonNil(m.Cc), Bcc: nonNil(m.Bcc), Subject: m.Subject, Preview: m.Preview, Truncated: m.Truncated,
		Direction: string(m.Direction), IsRead: m.IsRead, Attachments: viewAll(m.Attachments, s.viewAttachment),
		Recipients: viewAll(m.Recipients, viewRecipient), Authentication: viewAuthentication(m.Authentication),
		Verification: viewVerification(m.Verification), Labels: nonNil(m.Labels), Highlights: nonNil(m.Highlights), Blocked: m.Blocked,
		Spam: viewSpam(m.Spam), IsSpam: m.IsSpam, CreatedDT: apiTime(m.CreatedAt)}
	if m.Direction == core.Outgoing {
		v.DeliveryStatus, v.DeliveryError = optString(string(m.DeliveryStatus)), optString(m.DeliveryError)
	}
	return v
}

func (s *server) listInboxes(c *gin.Context) (int, any, error) {
	q := newStrictQuery(c)
	identity := q.uuid("identity")
	lq := q.list()
	if err := q.err(); err != nil {
		return 0, nil, err
	}
	list, total, err := s.app.Inboxes.Inboxes(c.Request.Context(), principal(c), identity, lq.page)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, listed(s, c, lq, list, total, viewInbox), nil
}

func (s *server) createInbox(c *gin.Context) (int, any, error) {
	identity, err := identityParam(c)
	if err != nil {
		return 0, nil, err
	}
	in, err := readInput(c)
	if err != nil {
		return 0, nil, err
	}
	email := in.text("email")
	if err := in.err(); err != nil {
		return 0, nil, err
	}
	inbox, err := s.app.Inboxes.CreateInbox(c.Request.Context(), principal(c), identity, email)
	return http.StatusCreated, viewInbox(inbox), err
}

func (s *server) getInbox(c *gin.Context) (int, any, error) {
	id, err := pathID(c, "id", "Inbox")
	if err != nil {
		return 0, nil, err
	}
	in, err := s.app.Inboxes.Inbox(c.Request.Context(), principal(c), id)
	return http.StatusOK, viewInbox(in), err
}

func (s *server) checkAvailability(c *gin.Context) (int, any, error) {
	q := newStrictQuery(c)
	requested := q.email("email")
	if err := q.err(); err != nil {
		return 0, nil, err
	}
	email, available, err := s.app.Inboxes.CheckAvailability(c.Request.Context(), principal(c), requested)
	return http.StatusOK, gin.H{"available": available, "email": email}, err
}

func (s *server) listThreads(c *gin.Context) (int, any, error) {
	q := newStrictQuery(c)
	identity, hasUnread := q.uuid("identity"), q.boolean("has_unread")
	inbox := q.integer("inbox", 0, 1, 1<<62)
	labels, excluded := q.labels("labels"), q.labels("exclude_labels")
	search := q.search(core.SearchMail)
	lq := q.list()
	if err := q.err(); err != nil {
		return 0, nil, err
	}
	list, total, err := s.app.Reading.Threads(c.Request.Context(), principal(c), identity,
		ports.ThreadFilter{InboxID: inbox, HasUnread: hasUnread, Labels: labels, ExcludeLabels: excluded, Search: search, Page: lq.page})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, listed(s, c, lq, list, total, viewThread), nil
}

// threadDetailView lists a thread's messages as summaries: a thread of a
// thousand large messages must not be answered in one body.
type threadDetailView struct {
	ThreadID string               `json:"thread_id"`
	Inbox    int64                `json:"inbox"`
	Subject  string               `json:"subject"`
	Labels   []string             `json:"labels"`
	Messages []messageSummaryView `json:"messages"`
}

func (s *server) getThread(c *gin.Context) (int, any, error) {
	t, msgs, err := s.app.Reading.Thread(c.Request.Context(), principal(c), c.Param("id"))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, threadDetailView{ThreadID: t.ID, Inbox: t.InboxID, Subject: t.Subject, Labels: nonNil(t.Labels),
		Messages: viewAll(msgs, s.viewSummary)}, nil
}

func (s *server) listMessages(c *gin.Context) (int, any, error) {
	q := newStrictQuery(c)
	identity := q.uuid("identity")
	f := ports.MessageFilter{
		InboxID:       q.integer("inbox", 0, 1, 1<<62),
		ThreadID:      q.str("thread_id"),
		FromEmail:     q.email("from_email"),
		IsRead:        q.boolean("is_read"),
		Authenticated: q.boolean("authenticated"),
		CreatedAfter:  q.time("created_after"),
		Labels:        q.labels("labels"),
		ExcludeLabels: q.labels("exclude_labels"),
		Limit:         q.limit(),
		Offset:        q.offset(),
	}
	f.CountUpTo = q.countUpTo(f.Offset, f.Limit)
	f.Search, f.NewestFirst = q.search(core.SearchMail), q.newestFirst()
	if b := q.boolean("include_blocked"); b != nil {
		f.IncludeBlocked = *b
	}
	if b := q.boolean("include_spam"); b != nil {
		f.IncludeSpam = *b
	}
	if d := q.str("direction"); d != "" {
		var ok bool
		if f.Direction, ok = core.ParseDirection(d); !ok {
			q.problems.Add("direction", "%q is not a valid choice; use incoming or outgoing.", d)
		}
	}
	if err := q.err(); err != nil {
		return 0, nil, err
	}
	msgs, total, err := s.app.Reading.Messages(c.Request.Context(), principal(c), identity, f)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, envelope(s, c, ports.Page{Limit: f.Limit, Offset: f.Offset}, total, viewAll(msgs, s.viewSummary)), nil
}

func (s *server) getMessage(c *gin.Context) (int, any, error) {
	id, err := pathID(c, "id", "Message")
	if err != nil {
		return 0, nil, err
	}
	m, err := s.app.Reading.Message(c.Request.Context(), principal(c), id)
	return http.StatusOK, s.viewMessage(m), err
}

// spamLearnedHeader says whether rspamd learned from a move (POST
// …/spam/ and …/not-spam/): "false" when it failed or none is configured;
// the move stands either way.
const spamLearnedHeader = "Callsign-Spam-Learned"

// markSpam serves POST /api/email-messages/{id}/spam/ (spam) and
// …/not-spam/: the message moves, and rspamd learns from it.
func (s *server) markSpam(spam bool) handler {
	return func(c *gin.Context) (int, any, error) {
		id, err := pathID(c, "id", "Message")
		if err != nil {
			return 0, nil, err
		}
		m, learned, err := s.app.Reading.MarkSpam(c.Request.Context(), principal(c), id, spam)
		if err != nil {
			return 0, nil, err
		}
		c.Header(spamLearnedHeader, strconv.FormatBool(learned))
		return http.StatusOK, s.viewMessage(m), nil
	}
}

// updateReadFlag serves PUT and PATCH on a message (email or SMS): is_read
// is its one mutable field, and PUT requires it. The message's other fields,
// sent back as read, are read-only and ignored; without is_read the message
// is left as it is.
func updateReadFlag[M, V any](replace bool, get func(context.Context, core.Principal, int64) (M, error),
	setRead func(context.Context, core.Principal, int64, bool) (M, error), view func(M) V) handler {
	return func(c *gin.Context) (int, any, error) {
		id, err := pathID(c, "id", "Message")
		if err != nil {
			return 0, nil, err
		}
		in, err := readInputFor[V](c)
		if err != nil {
			return 0, nil, err
		}
		read := in.boolean("is_read")
		if read == nil && replace && !in.problems.Has("is_read") {
			in.problems.Add("is_read", "This field is required.")
		}
		if err := in.err(); err != nil {
			return 0, nil, err
		}
		var m M
		if read == nil {
			m, err = get(c.Request.Context(), principal(c), id)
		} else {
			m, err = setRead(c.Request.Context(), principal(c), id, *read)
		}
		return http.StatusOK, view(m), err
	}
}

// labelMessage serves PUT (add) and DELETE (remove) of
// /email-messages/{id}/labels/{label}/: both idempotent. PUT answers the
// message with its labels, DELETE 204.
func (s *server) labelMessage(add bool) handler {
	return func(c *gin.Context) (int, any, error) {
		id, err := pathID(c, "id", "Message")
		if err != nil {
			return 0, nil, err
		}
		m, err := s.app.Reading.Label(c.Request.Context(), principal(c), id, c.Param("label"), add)
		if !add {
			return http.StatusNoContent, nil, err
		}
		return http.StatusOK, s.viewMessage(m), err
	}
}

// readSendInput reads the body shared by compose, reply, reply-all and forward.
func readSendInput(c *gin.Context) (app.SendInput, error) {
	in, err := readInput(c)
	if err != nil {
		return app.SendInput{}, err
	}
	si := sendInputOf(in)
	return si, in.err()
}

// sendInputOf reads the fields of that body from in.
func sendInputOf(in *input) app.SendInput {
	var si app.SendInput
	si.To, _ = in.strList("to_email")
	si.Cc, _ = in.strList("cc")
	si.Bcc, _ = in.strList("bcc")
	si.AttachmentIDs, _ = in.strList("attachment_uuids")
	si.Subject, si.Content, si.HTML = in.str("subject"), in.str("content"), in.text("html")
	return si
}

func (s *server) compose(c *gin.Context) (int, any, error) {
	q := newQuery(c)
	identity, inbox := q.uuid("identity"), q.integer("inbox", 0, 1, 1<<62)
	if err := q.err(); err != nil {
		return 0, nil, err
	}
	si, err := readSendInput(c)
	if err != nil {
		return 0, nil, err
	}
	m, err := s.app.Sending.Compose(c.Request.Context(), principal(c), identity, inbox, si)
	return http.StatusCreated, s.viewMessage(m), err
}

// respond handles reply, reply-all and forward of message {id}.
func (s *server) respond(kind string) handler {
	return func(c *gin.Context) (int, any, error) {
		id, err := pathID(c, "id", "Message")
		if err != nil {
			return 0, nil, err
		}
		si, err := readSendInput(c)
		if err != nil {
			return 0, nil, err
		}
		ctx, p := c.Request.Context(), principal(c)
		var m core.EmailMessage
		switch kind {
		case "reply":
			m, err = s.app.Sending.Reply(ctx, p, id, si, false)
		case "reply-all":
			m, err = s.app.Sending.Reply(ctx, p, id, si, true)
		default:
			m, err = s.app.Sending.Forward(ctx, p, id, si)
		}
		return http.StatusCreated, s.viewMessage(m), err
	}
}

// pathBytes answers what read gives for the object the path's id names (a
// message's source, a call's recording), as contentType.
func (s *server) pathBytes(what, contentType string, read func(context.Context, core.Principal, int64) ([]byte, error)) gin.HandlerFunc {
	return func(c *gin.Context) {
		id, err := pathID(c, "id", what)
		if err == nil {
			var b []byte
			if b, err = read(c.Request.Context(), principal(c), id); err == nil {
				c.Data(http.StatusOK, contentType, b)
				return
			}
		}
		s.fail(c, err)
	}
}

// multipartSlack is room for a multipart envelope around an upload.
const multipartSlack = 64 << 10

func (s *server) uploadAttachment(c *gin.Context) (int, any, error) {
	identity, err := identityParam(c)
	if err != nil {
		return 0, nil, err
	}
	tooLarge := core.TooLarge("The file is larger than %d bytes.", s.maxUpload)
	in, err := readInputLimit(c, s.maxUpload+multipartSlack, tooLarge)
	if err != nil {
		return 0, nil, err
	}
	files := in.filesOf("file")
	if len(files) != 1 {
		in.problems.Add("file", "Send one file in the multipart field \"file\".")
	}
	if err := in.err(); err != nil {
		return 0, nil, err
	}
	fh := files[0]
	if fh.Size > s.maxUpload {
		return 0, nil, tooLarge
	}
	f, err := fh.Open()
	if err != nil {
		return 0, nil, err
	}
	defer f.Close()
	content, err := io.ReadAll(f)
	if err != nil {
		return 0, nil, err
	}
	ctype := fh.Header.Get("Content-Type")
	if mt, _, err := mime.ParseMediaType(ctype); err == nil {
		ctype = mt
	} else {
		ctype = ""
	}
	a, err := s.app.Sending.Upload(c.Request.Context(), principal(c), identity, fh.Filename, ctype, content)
	return http.StatusCreated, s.viewAttachment(a), err
}

// downloadAttachment always answers as a download, never for display: a
// received HTML or SVG file must not run as a page of the API's origin.
func (s *server) downloadAttachment(c *gin.Context) {
	id, err := pathUUID(c, "uuid", "Attachment")
	if err == nil {
		var a ports.AttachmentContent
		if a, err = s.app.Reading.Attachment(c.Request.Context(), principal(c), id); err == nil {
			c.Header("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": a.Filename}))
			c.Header("X-Content-Type-Options", "nosniff")
			c.Data(http.StatusOK, a.ContentType, a.Content)
			return
		}
	}
	s.fail(c, err)
}

func (s *server) deleteInbox(c *gin.Context) (int, any, error) {
	id, err := pathID(c, "id", "Inbox")
	if err != nil {
		return 0, nil, err
	}
	return http.StatusNoContent, nil, s.app.Inboxes.DeleteInbox(c.Request.Context(), principal(c), id)
}

func (s *server) deleteMessage(c *gin.Context) (int, any, error) {
	id, err := pathID(c, "id", "Message")
	if err != nil {
		return 0, nil, err
	}
	return http.StatusNoContent, nil, s.app.Reading.DeleteMessage(c.Request.Context(), principal(c), id)
}
