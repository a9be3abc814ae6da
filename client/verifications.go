package client

import (
	"context"
	"net/url"
	"strconv"
	"time"
)

// ReceivedVerification is a code or sign-in link an identity received, by
// mail or text (GET /api/identities/{uuid}/verifications/).
type ReceivedVerification struct {
	Source    string  `json:"source"`  // email or sms
	Message   int64   `json:"message"` // the email or text message's id, by source
	From      string  `json:"from"`
	Code      *string `json:"code"`
	Link      *string `json:"link"`
	Kind      string  `json:"kind"`
	CreatedDT string  `json:"created_dt"`
}

// VerificationWait says which verification a wait is for; zero fields
// match anything.
type VerificationWait struct {
	// After keeps those received after it: the API's date-time (RFC 3339).
	After string
	// From is a part of the sender's address or number, ignoring case.
	From string
	// Source is email or sms.
	Source string
}

// WaitForVerification is the newest verification of the identity that
// matches w, waiting on the server up to wait (at most 60 s) for one to
// arrive; nil when none did.
func (c *Client) WaitForVerification(ctx context.Context, identity string, w VerificationWait, wait time.Duration) (*ReceivedVerification, error) {
	q := url.Values{"limit": {"1"}, "wait": {strconv.Itoa(int(wait / time.Second))}}
	if w.After != "" {
		q.Set("after", w.After)
	}
	if w.From != "" {
		q.Set("from", w.From)
	}
	if w.Source != "" {
		q.Set("source", w.Source)
	}
	var l []ReceivedVerification
	if err := c.call(ctx, "GET", "/api/identities/"+url.PathEscape(identity)+"/verifications/", q, nil, &l); err != nil || len(l) == 0 {
		return nil, err
	}
	return &l[0], nil
}
