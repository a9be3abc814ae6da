package httpapi

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
)

// verificationView is a message's `verification`: what it asks its reader
// to type or click; null for a message that carries neither.
type verificationView struct {
	Code *string `json:"code"`
	Link *string `json:"link"`
	Kind string  `json:"kind"`
}

func viewVerification(v *core.Verification) *verificationView {
	if v == nil {
		return nil
	}
	return &verificationView{Code: optString(v.Code), Link: optString(v.Link), Kind: string(v.Kind)}
}

type receivedVerificationView struct {
	Source    string  `json:"source"`
	Message   int64   `json:"message"`
	From      string  `json:"from"`
	Code      *string `json:"code"`
	Link      *string `json:"link"`
	Kind      string  `json:"kind"`
	CreatedDT apiTime `json:"created_dt"`
}

func viewReceivedVerification(v core.ReceivedVerification) receivedVerificationView {
	return receivedVerificationView{Source: string(v.Source), Message: v.MessageID, From: v.From, Code: optString(v.Code),
		Link: optString(v.Link), Kind: string(v.Kind), CreatedDT: apiTime(v.CreatedAt)}
}

// listVerifications is GET /api/identities/{uuid}/verifications/: the
// codes and links the identity received, newest first, and with wait the
// call that holds until the next one arrives.
func (s *server) listVerifications(c *gin.Context) (int, any, error) {
	id, err := pathUUID(c, "uuid", "Identity")
	if err != nil {
		return 0, nil, err
	}
	q := newStrictQuery(c)
	vq := app.VerificationQuery{From: q.str("from")}
	if after := q.time("after"); after != nil {
		vq.After = *after
	}
	switch src := q.str("source"); src {
	case "", string(core.VerificationByEmail), string(core.VerificationBySMS):
		vq.Source = core.VerificationSource(src)
	default:
		q.problems.Add("source", "\"%s\" is not a valid choice; use email or sms.", src)
	}
	vq.Limit = int(q.integer("limit", core.DefaultVerificationLimit, 1, core.MaxVerificationLimit))
	vq.Wait = time.Duration(q.integer("wait", 0, 0, int64(core.MaxVerificationWait/time.Second))) * time.Second
	if err := q.err(); err != nil {
		return 0, nil, err
	}
	if vq.Wait > 0 {
		release, err := s.holdStream(c)
		if err != nil {
			return 0, nil, err
		}
		defer release()
	}
	found, err := s.app.Verifications.List(c.Request.Context(), principal(c), id, vq)
	return http.StatusOK, viewAll(found, viewReceivedVerification), err
}
