package console

import (
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/microcosm-cc/bluemonday"

	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

type mailData struct {
	Threads []core.Thread
	Unread  bool
	Query   string // the search, as typed
	Pager   pager
}

// mailPage lists an identity's threads, latest activity first, a page at
// a time; ?unread=1 keeps those with unread mail.
func (c *console) mailPage(v *visit) error {
	ident, err := c.identity(v)
	if err != nil {
		return err
	}
	var hasUnread *bool
	unread := v.r.URL.Query().Get("unread") == "1"
	if unread {
		hasUnread = &unread
	}
	// Pages continue after a thread (?after=), not at an offset: the
	// thousandth page of a large inbox costs what the first does. One more
	// than a page tells whether there is a next one, without counting.
	after := parseThreadCursor(v.r.URL.Query().Get("after"))
	f := ports.ThreadFilter{HasUnread: hasUnread, After: after, Page: ports.Page{Limit: pageSize + 1}}
	typed := strings.TrimSpace(v.r.URL.Query().Get("q"))
	if typed != "" {
		search, err := core.ParseSearch(typed)
		if err != nil {
			return err
		}
		f.Search = &search
	}
	threads, _, err := c.app.Reading.Threads(v.r.Context(), v.principal, ident.ID, f)
	if err != nil {
		return err
	}
	var p pager
	if after != nil {
		q := v.r.URL.Query()
		q.Del("after")
		p.Prev, p.First = v.r.URL.Path+"?"+q.Encode(), true
	}
	if len(threads) > pageSize {
		threads = threads[:pageSize]
		last := threads[pageSize-1]
		q := v.r.URL.Query()
		q.Set("after", strconv.FormatInt(last.LastMessageAt.UnixMicro(), 10)+"."+last.ID)
		p.Next = v.r.URL.Path + "?" + q.Encode()
	}
	c.render(v, http.StatusOK, "mail", view{Title: "Mail", Identity: &ident, Section: "mail",
		Data: mailData{Threads: threads, Unread: unread, Query: typed, Pager: p}})
	return nil
}

// parseThreadCursor reads ?after=<microseconds>.<thread id>; nil for the
// first page, or for anything else.
func parseThreadCursor(s string) *ports.ThreadCursor {
	at, id, ok := strings.Cut(s, ".")
	micros, err := strconv.ParseInt(at, 10, 64)
	if !ok || err != nil || id == "" {
		return nil
	}
	return &ports.ThreadCursor{LastMessageAt: time.UnixMicro(micros).UTC(), ID: id}
}

type threadData struct {
	Thread   core.Thread
	Messages []messageView
	Latest   *messageView // the newest message with a code or link, shown first
}

type messageView struct {
	core.EmailMessage
	Outgoing   bool
	HTMLFrame  string // the sanitised HTML body's address; "" without one
	ShowImages bool
	Last       bool   // the thread's latest message: r replies to it
	Verdict    string // pass, fail or other; "" when not checked
}

// threadPage shows a thread's messages, oldest first. HTML bodies are
// shown in sandboxed frames; ?images=<message id> loads that message's
// remote images.
func (c *console) threadPage(v *visit) error {
	t, msgs, err := c.app.Reading.Thread(v.r.Context(), v.principal, v.r.PathValue("id"))
	if err != nil {
		return err
	}
	ident, err := c.app.Identities.Get(v.r.Context(), v.principal, t.IdentityID)
	if err != nil {
		return err
	}
	images, _ := strconv.ParseInt(v.r.URL.Query().Get("images"), 10, 64)
	views := make([]messageView, len(msgs))
	// The thread lists summaries; each message's bodies are read here,
	// newest first, while their text fits threadTextBudget. Older ones
	// show their preview: a long thread of large mail stays a small page.
	spent := 0
	for i := len(msgs) - 1; i >= 0; i-- {
		if spent > threadTextBudget {
			msgs[i].Text = msgs[i].Preview + " …"
			continue
		}
		full, err := c.app.Reading.Message(v.r.Context(), v.principal, msgs[i].ID)
		if err != nil {
			return err
		}
		spent += len(full.Text)
		msgs[i] = full
	}
	for i, m := range msgs {
		mv := messageView{EmailMessage: m, Outgoing: m.Direction == core.Outgoing, ShowImages: m.ID == images, Last: i == len(msgs)-1}
		mv.HTML = "" // served by the frame, not kept for the page
		if m.HTML != "" {
			mv.HTMLFrame = messagePath(m.ID) + "body/"
			if mv.ShowImages {
				mv.HTMLFrame += "?images=1"
			}
		}
		if a := m.Authentication; a != nil && a.Checked {
			switch a.Verdict {
			case core.AuthPass:
				mv.Verdict = "pass"
			case core.AuthFail:
				mv.Verdict = "fail"
			default:
				mv.Verdict = "other"
			}
		}
		views[i] = mv
	}
	data := threadData{Thread: t, Messages: views}
	for i := len(views) - 1; i >= 0 && data.Latest == nil; i-- {
		if views[i].Verification != nil {
			data.Latest = &views[i]
		}
	}
	c.render(v, http.StatusOK, "thread", view{Title: subjectOrNone(t.Subject), Identity: &ident, Section: "mail", Data: data})
	return nil
}

// threadTextBudget bounds the text bodies one thread page reads.
const threadTextBudget = 2 << 20

func messagePath(id int64) string { return root + "messages/" + strconv.FormatInt(id, 10) + "/" }

// mailPolicy keeps what a message needs to look as written (text, links,
// tables, images, inline styles of layout and colour) and drops scripts,
// forms, frames, event handlers and style sheets.
var mailPolicy = func() *bluemonday.Policy {
	p := bluemonday.UGCPolicy()
	p.AllowAttrs("align", "valign", "bgcolor", "width", "height", "border", "cellpadding", "cellspacing").Globally()
	p.AllowAttrs("color", "face", "size").OnElements("font")
	p.AllowElements("font", "center")
	p.AllowStyles("color", "background-color", "font-family", "font-size", "font-weight", "font-style", "text-align",
		"text-decoration", "line-height", "margin", "margin-top", "margin-bottom", "margin-left", "margin-right",
		"padding", "padding-top", "padding-bottom", "padding-left", "padding-right", "border", "border-collapse",
		"width", "max-width", "height", "vertical-align", "display").Globally()
	p.RequireNoReferrerOnLinks(true)
	return p
}()

// The frame's policy: no script, nothing from elsewhere; remote images
// only when asked for. The sandbox directive applies even when the body
// is opened on its own, outside the console's sandboxed frame. It keeps
// the console's origin (allow-same-origin) so that the console's script
// can read the body's height and size the frame to it; that is safe only
// because nothing in the body may run: no allow-scripts, no script-src.
const (
	bodyPolicy       = "sandbox allow-same-origin allow-popups allow-popups-to-escape-sandbox; default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'self'; img-src data:"
	bodyPolicyImages = bodyPolicy + " https: http:"
)

const bodyHead = `<!doctype html><html><head><meta charset="utf-8"><base target="_blank">` +
	`<style>body{margin:8px;font:15px/1.5 system-ui,sans-serif;color:#1c2433;overflow-wrap:anywhere}img{max-width:100%;height:auto}</style>` +
	`</head><body>`

// messageBody serves a message's HTML body, sanitised, for its frame.
func (c *console) messageBody(v *visit) error {
	id, err := pathID(v, "id", "Message")
	if err != nil {
		return err
	}
	m, err := c.app.Reading.Message(v.r.Context(), v.principal, id)
	if err != nil {
		return err
	}
	h := v.w.Header()
	h.Set("Content-Security-Policy", bodyPolicy)
	if v.r.URL.Query().Get("images") == "1" {
		h.Set("Content-Security-Policy", bodyPolicyImages)
	}
	h.Set("X-Frame-Options", "SAMEORIGIN")
	h.Set("Content-Type", "text/html; charset=utf-8")
	_, _ = io.WriteString(v.w, bodyHead+mailPolicy.Sanitize(m.HTML)+"</body></html>")
	return nil
}

// attachment downloads a file: always as a download, never shown inline
// or sniffed into something the browser would run.
func (c *console) attachment(v *visit) error {
	id, err := pathUUID(v, "id", "Attachment")
	if err != nil {
		return err
	}
	a, err := c.app.Reading.Attachment(v.r.Context(), v.principal, id)
	if err != nil {
		return err
	}
	h := v.w.Header()
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": a.Filename}))
	h.Set("Content-Type", "application/octet-stream")
	if _, _, err := mime.ParseMediaType(a.ContentType); err == nil {
		h.Set("Content-Type", a.ContentType)
	}
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
	h.Set("Content-Length", strconv.Itoa(len(a.Content)))
	_, _ = v.w.Write(a.Content)
	return nil
}

// markRead marks a message read or unread, and goes back to its thread.
func (c *console) markRead(v *visit) error {
	id, err := pathID(v, "id", "Message")
	if err != nil {
		return err
	}
	m, err := c.app.Reading.SetRead(v.r.Context(), v.principal, id, v.r.PostFormValue("read") == "1")
	if err != nil {
		return err
	}
	return redirect(v, threadPath(m.ThreadID))
}

func threadPath(id string) string { return root + "threads/" + id + "/" }

// The forms that send: compose, reply, reply-all and forward.

type sendForm struct {
	Mode                          string // compose, reply, reply-all, forward
	Action                        string
	Inboxes                       []core.Inbox
	Inbox                         int64
	Original                      *core.EmailMessage
	To, Cc, Bcc, Subject, Content string
}

var modeTitles = map[string]string{"compose": "New message", "reply": "Reply", "reply-all": "Reply to all", "forward": "Forward"}

func (c *console) showSendForm(v *visit, ident core.Identity, f sendForm, problem error) error {
	pv := view{Title: modeTitles[f.Mode], Identity: &ident, Section: "mail", Data: f}
	c.render(v, c.withProblem(v, &pv, problem), "send", pv)
	return nil
}

func (c *console) composePage(v *visit) error {
	ident, err := c.identity(v)
	if err != nil {
		return err
	}
	f, err := c.composeForm(v, ident)
	if err != nil {
		return err
	}
	return c.showSendForm(v, ident, f, nil)
}

func (c *console) composeForm(v *visit, ident core.Identity) (sendForm, error) {
	inboxes, _, err := c.app.Inboxes.Inboxes(v.r.Context(), v.principal, ident.ID, ports.Page{Limit: core.MaxUnpagedList})
	return sendForm{Mode: "compose", Action: identityPath(ident.ID) + "compose/", Inboxes: inboxes}, err
}

func (c *console) compose(v *visit) error {
	ident, err := c.identity(v)
	if err != nil {
		return err
	}
	f, err := c.composeForm(v, ident)
	if err != nil {
		return err
	}
	in := c.readSendForm(v, &f)
	f.Inbox, _ = strconv.ParseInt(v.r.PostFormValue("inbox"), 10, 64)
	if err := c.attach(v, ident.ID, &in); err != nil {
		return c.showSendForm(v, ident, f, err)
	}
	m, err := c.app.Sending.Compose(v.r.Context(), v.principal, ident.ID, f.Inbox, in)
	if err != nil {
		return c.showSendForm(v, ident, f, err)
	}
	return redirect(v, threadPath(m.ThreadID))
}

// respondForm is the form of a reply, reply-all or forward of a message.
func (c *console) respondForm(v *visit) (core.Identity, sendForm, error) {
	id, err := pathID(v, "id", "Message")
	if err != nil {
		return core.Identity{}, sendForm{}, err
	}
	m, err := c.app.Reading.Message(v.r.Context(), v.principal, id)
	if err != nil {
		return core.Identity{}, sendForm{}, err
	}
	ident, err := c.app.Identities.Get(v.r.Context(), v.principal, m.IdentityID)
	if err != nil {
		return core.Identity{}, sendForm{}, err
	}
	mode := v.r.URL.Query().Get("mode")
	if _, ok := modeTitles[mode]; !ok || mode == "compose" {
		mode = "reply"
	}
	return ident, sendForm{Mode: mode, Action: messagePath(m.ID) + "respond/?mode=" + mode, Original: &m}, nil
}

func (c *console) respondPage(v *visit) error {
	ident, f, err := c.respondForm(v)
	if err != nil {
		return err
	}
	return c.showSendForm(v, ident, f, nil)
}

func (c *console) respond(v *visit) error {
	ident, f, err := c.respondForm(v)
	if err != nil {
		return err
	}
	in := c.readSendForm(v, &f)
	if err := c.attach(v, ident.ID, &in); err != nil {
		return c.showSendForm(v, ident, f, err)
	}
	ctx, id := v.r.Context(), f.Original.ID
	var m core.EmailMessage
	switch f.Mode {
	case "forward":
		m, err = c.app.Sending.Forward(ctx, v.principal, id, in)
	default:
		m, err = c.app.Sending.Reply(ctx, v.principal, id, in, f.Mode == "reply-all")
	}
	if err != nil {
		return c.showSendForm(v, ident, f, err)
	}
	return redirect(v, threadPath(m.ThreadID))
}

// readSendForm reads the fields every sending form has into the form (to
// show again) and the app's input.
func (c *console) readSendForm(v *visit, f *sendForm) app.SendInput {
	f.To, f.Cc, f.Bcc = formValue(v, "to"), formValue(v, "cc"), formValue(v, "bcc")
	f.Subject, f.Content = formValue(v, "subject"), v.r.PostFormValue("content")
	in := app.SendInput{To: addresses(f.To), Cc: addresses(f.Cc), Bcc: addresses(f.Bcc), Content: &f.Content}
	if f.Mode == "compose" {
		in.Subject = &f.Subject
	}
	return in
}

// addresses splits a field of comma- or space-separated addresses.
func addresses(field string) []string {
	return strings.FieldsFunc(field, func(r rune) bool { return r == ',' || r == ';' || r == ' ' || r == '\n' || r == '\r' || r == '\t' })
}

// attach uploads the form's files and names them in the input.
func (c *console) attach(v *visit, identityID string, in *app.SendInput) error {
	if v.r.MultipartForm == nil {
		return nil
	}
	for _, fh := range v.r.MultipartForm.File["attachments"] {
		if fh.Filename == "" && fh.Size == 0 {
			continue // the file field, left empty
		}
		f, err := fh.Open()
		if err != nil {
			return err
		}
		content, err := io.ReadAll(io.LimitReader(f, c.maxUpload+1))
		_ = f.Close()
		if err != nil {
			return err
		}
		contentType := fh.Header.Get("Content-Type")
		if contentType == "" {
			contentType = "application/octet-stream"
		}
		a, err := c.app.Sending.Upload(v.r.Context(), v.principal, identityID, fh.Filename, contentType, content)
		if err != nil {
			return err
		}
		in.AttachmentIDs = append(in.AttachmentIDs, a.ID)
	}
	return nil
}
