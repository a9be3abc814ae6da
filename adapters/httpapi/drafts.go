package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
)

// draftSummaryView is a draft as the list shows it: everything but the
// bodies, with a preview of the text, so a page's size is bounded by its
// length (as the message list's).
type draftSummaryView struct {
	ID               string   `json:"id"`
	URL              string   `json:"url"`
	Identity         string   `json:"identity"`
	Inbox            int64    `json:"inbox"`
	Kind             string   `json:"kind"`
	ReplyTo          *int64   `json:"reply_to"`
	ForwardOf        *int64   `json:"forward_of"`
	ToEmail          []string `json:"to_email"`
	Cc               []string `json:"cc"`
	Bcc              []string `json:"bcc"`
	Subject          *string  `json:"subject"`
	Preview          string   `json:"preview"`
	AttachmentUUIDs  []string `json:"attachment_uuids"`
	SendAt           *apiTime `json:"send_at"`
	AwaitingApproval bool     `json:"awaiting_approval"`
	CreatedDT        apiTime  `json:"created_dt"`
	UpdatedDT        apiTime  `json:"updated_dt"`
}

// draftView shows one draft whole: the summary's fields and its bodies.
type draftView struct {
	draftSummaryView
	Content *string `json:"content"`
	HTML    string  `json:"html"`
}

func (s *server) viewDraft(d core.Draft) draftView {
	return draftView{draftSummaryView: s.viewDraftSummary(d.Summary()), Content: d.Content, HTML: d.HTML}
}

func (s *server) viewDraftSummary(d core.Draft) draftSummaryView {
	v := draftSummaryView{ID: d.ID, URL: s.baseURL + "/api/email-drafts/" + d.ID + "/", Identity: d.IdentityID, Inbox: d.InboxID,
		Kind: string(d.Kind), ToEmail: nonNil(d.To), Cc: nonNil(d.Cc), Bcc: nonNil(d.Bcc), Subject: d.Subject, Preview: d.Preview,
		AttachmentUUIDs: nonNil(d.AttachmentIDs), SendAt: optTime(d.SendAt), AwaitingApproval: d.AwaitingApproval,
		CreatedDT: apiTime(d.CreatedAt), UpdatedDT: apiTime(d.UpdatedAt)}
	if d.OriginalID != 0 {
		id := d.OriginalID
		if d.Kind == core.DraftForward {
			v.ForwardOf = &id
		} else {
			v.ReplyTo = &id
		}
	}
	return v
}

func (s *server) createDraft(c *gin.Context) (int, any, error) {
	q := newQuery(c)
	identity, inbox := q.uuid("identity"), q.integer("inbox", 0, 1, 1<<62)
	if err := q.err(); err != nil {
		return 0, nil, err
	}
	in, err := readInput(c)
	if err != nil {
		return 0, nil, err
	}
	di := app.DraftInput{SendInput: sendInputOf(in)}
	di.SendAt, _ = in.time("send_at")
	di.ReplyTo, di.ForwardOf = in.id("reply_to"), in.id("forward_of")
	if b := in.boolean("reply_all"); b != nil {
		di.ReplyAll = *b
	}
	if err := in.err(); err != nil {
		return 0, nil, err
	}
	d, err := s.app.Sending.CreateDraft(c.Request.Context(), principal(c), identity, inbox, di)
	return http.StatusCreated, s.viewDraft(d), err
}

func (s *server) listDrafts(c *gin.Context) (int, any, error) {
	q := newStrictQuery(c)
	identity, awaiting := q.uuid("identity"), q.boolean("awaiting_approval")
	lq := q.list()
	if err := q.err(); err != nil {
		return 0, nil, err
	}
	list, total, err := s.app.Sending.Drafts(c.Request.Context(), principal(c), identity, awaiting, lq.page)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, listed(s, c, lq, list, total, s.viewDraftSummary), nil
}

func (s *server) getDraft(c *gin.Context) (int, any, error) {
	id, err := pathUUID(c, "id", "Draft")
	if err != nil {
		return 0, nil, err
	}
	d, err := s.app.Sending.Draft(c.Request.Context(), principal(c), id)
	return http.StatusOK, s.viewDraft(d), err
}

// updateDraft changes the fields a PATCH sends; what the draft answers
// (reply_to, forward_of, reply_all) is fixed when it is made.
func (s *server) updateDraft(c *gin.Context) (int, any, error) {
	id, err := pathUUID(c, "id", "Draft")
	if err != nil {
		return 0, nil, err
	}
	in, err := readInputFor[draftView](c)
	if err != nil {
		return 0, nil, err
	}
	for _, fixed := range []string{"reply_to", "forward_of", "reply_all"} {
		if in.present(fixed) {
			in.problems.Add(fixed, "This cannot be changed; create another draft.")
		}
	}
	to, hasTo := in.strList("to_email")
	cc, hasCc := in.strList("cc")
	bcc, hasBcc := in.strList("bcc")
	uploads, hasUploads := in.strList("attachment_uuids")
	subject, content, html := in.str("subject"), in.str("content"), in.str("html")
	sendAt, hasSendAt := in.time("send_at")
	if err := in.err(); err != nil {
		return 0, nil, err
	}
	d, err := s.app.Sending.UpdateDraft(c.Request.Context(), principal(c), id, func(d *core.Draft) {
		setIf(&d.To, to, hasTo)
		setIf(&d.Cc, cc, hasCc)
		setIf(&d.Bcc, bcc, hasBcc)
		setIf(&d.AttachmentIDs, uploads, hasUploads)
		setIf(&d.Subject, subject, subject != nil)
		setIf(&d.Content, content, content != nil)
		if html != nil {
			d.HTML = *html
		}
		setIf(&d.SendAt, sendAt, hasSendAt)
	})
	return http.StatusOK, s.viewDraft(d), err
}

// setIf sets *field to v when the request carried it.
func setIf[T any](field *T, v T, present bool) {
	if present {
		*field = v
	}
}

func (s *server) deleteDraft(c *gin.Context) (int, any, error) {
	id, err := pathUUID(c, "id", "Draft")
	if err != nil {
		return 0, nil, err
	}
	return http.StatusNoContent, nil, s.app.Sending.DeleteDraft(c.Request.Context(), principal(c), id)
}

// sendDraft sends a draft, or approves one awaiting approval (a management
// key), as compose answers: the message, queued. An optional updated_dt
// (the draft's, as the caller read it) sends it only if unchanged since.
func (s *server) sendDraft(c *gin.Context) (int, any, error) {
	id, err := pathUUID(c, "id", "Draft")
	if err != nil {
		return 0, nil, err
	}
	in, err := readInput(c)
	if err != nil {
		return 0, nil, err
	}
	seen, _ := in.time("updated_dt")
	if err := in.err(); err != nil {
		return 0, nil, err
	}
	var m core.EmailMessage
	if seen != nil {
		m, err = s.app.Sending.ApproveDraft(c.Request.Context(), principal(c), id, *seen)
	} else {
		m, err = s.app.Sending.SendDraft(c.Request.Context(), principal(c), id)
	}
	return http.StatusCreated, s.viewMessage(m), err
}

func (s *server) recoverDraft(c *gin.Context, id string) (int, any, error) {
	d, err := s.app.Sending.Draft(c.Request.Context(), principal(c), id)
	return http.StatusCreated, s.viewDraft(d), err
}
