package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/callsign/callsign/core"
)

// statusOf is the one mapping from core error kinds to HTTP statuses.
func statusOf(k core.Kind) int {
	switch k {
	case core.KindInvalid:
		return http.StatusBadRequest
	case core.KindUnauthorized:
		return http.StatusUnauthorized
	case core.KindPaymentRequired:
		return http.StatusPaymentRequired
	case core.KindForbidden:
		return http.StatusForbidden
	case core.KindNotFound:
		return http.StatusNotFound
	case core.KindConflict:
		return http.StatusConflict
	case core.KindTooLarge:
		return http.StatusRequestEntityTooLarge
	case core.KindRateLimited:
		return http.StatusTooManyRequests
	case core.KindUnavailable:
		return http.StatusServiceUnavailable
	case core.KindUnprocessable:
		return http.StatusUnprocessableEntity
	case core.KindGone:
		return http.StatusGone
	}
	return http.StatusInternalServerError
}

// statusClientClosedRequest is what the access log and the metrics record
// for a request the client cancelled before it was answered (nginx's 499):
// neither our fault nor the client's mistake.
const statusClientClosedRequest = 499

// detail is the body of every error that is not a validation error.
type detail struct {
	Detail string `json:"detail"`
}

// fail answers with err in the error shapes of the API: a validation error
// is {"field": ["message"]}, anything else {"detail": "message"}. Faults of
// ours are logged and answered without their text.
func (s *server) fail(c *gin.Context, err error) {
	var se *statusError
	if errors.As(err, &se) {
		abortJSON(c, se.status, detail{se.msg})
		return
	}
	var oe *core.OAuthError
	if errors.As(err, &oe) {
		abortJSON(c, http.StatusBadRequest, oauthErrorView{Error: oe.Code, Description: oe.Description})
		return
	}
	var e *core.Error
	if !errors.As(err, &e) && c.Request.Context().Err() == context.Canceled {
		// The client left (its connection closed, or it gave up): what
		// failed failed because of that, and nobody reads the answer.
		// The access log records the request as cancelled.
		c.AbortWithStatus(statusClientClosedRequest)
		return
	}
	if e == nil {
		s.log.Error("request failed", "method", c.Request.Method, "route", c.FullPath(), "err", err)
		abortJSON(c, http.StatusInternalServerError, detail{"A server error occurred."})
		return
	}
	status := statusOf(e.Kind)
	setErrorHeaders(c, e)
	if e.Kind == core.KindUnauthorized {
		c.Header("WWW-Authenticate", `Bearer realm="api"`)
	}
	if (e.Kind == core.KindInvalid || e.Kind == core.KindUnprocessable) && len(e.Fields) > 0 {
		abortJSON(c, status, e.Fields)
		return
	}
	abortJSON(c, status, detail{e.Message})
}

// setErrorHeaders adds the headers an error's status calls for.
func setErrorHeaders(c *gin.Context, e *core.Error) {
	if (e.Kind == core.KindRateLimited || e.Kind == core.KindUnavailable) && e.RetryAfterSeconds > 0 {
		c.Header("Retry-After", strconv.Itoa(e.RetryAfterSeconds))
	}
}

// oauthErrorView is RFC 6749 §5.2's error body, for the device token route.
type oauthErrorView struct {
	Error       string `json:"error"`
	Description string `json:"error_description,omitempty"`
}

// statusError is an HTTP-only failure with no core kind: 404 and 405 for
// routes, 415 for a body type we do not read.
type statusError struct {
	status int
	msg    string
}

func (e *statusError) Error() string { return e.msg }
