// Package mailgun sends outbound mail through Mailgun, implementing
// ports.MailRelay with mailgun-go's MIME send (POST
// {base}/{domain}/messages.mime): our exact bytes, DKIM signature
// included, go to the envelope recipients.
package mailgun

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	mg "github.com/mailgun/mailgun-go/v4"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// maxRecipients is how many recipients Mailgun takes in one send
// (https://documentation.mailgun.com/docs/mailgun/user-manual/sending-messages/#batch-sending);
// more are sent in several requests of the same bytes.
const maxRecipients = 1000

// Config says how to reach Mailgun.
type Config struct {
	APIKey string
	// APIBase is the API's root with its version, as mailgun-go spells it:
	// "" means https://api.mailgun.net/v3; https://api.eu.mailgun.net/v3
	// for the EU region; a fake in tests.
	APIBase string
	// Timeout bounds one Relay call; 0 means 2 minutes.
	Timeout time.Duration
}

// Mailgun is a ports.MailRelay backed by a Mailgun account.
type Mailgun struct {
	cfg  Config
	http *http.Client
}

var _ ports.MailRelay = (*Mailgun)(nil)

// New builds the adapter; it makes no request.
func New(cfg Config) *Mailgun {
	if cfg.APIBase == "" {
		cfg.APIBase = mg.APIBase
	}
	cfg.APIBase = strings.TrimSuffix(cfg.APIBase, "/")
	if cfg.Timeout <= 0 {
		cfg.Timeout = 2 * time.Minute
	}
	return &Mailgun{cfg: cfg, http: &http.Client{Timeout: cfg.Timeout}}
}

// client is mailgun-go bound to one sending domain, as it wants.
func (m *Mailgun) client(domain string) *mg.MailgunImpl {
	c := mg.NewMailgun(domain, m.cfg.APIKey)
	c.SetAPIBase(m.cfg.APIBase)
	c.SetClient(m.http)
	return c
}

// Relay sends raw for the envelope sender's domain (Mailgun sends for a
// domain of the account; our VERP sender is on the From address's domain),
// at most 1,000 recipients to a request.
func (m *Mailgun) Relay(ctx context.Context, from string, recipients []string, raw []byte) []ports.RelayOutcome {
	out := make([]ports.RelayOutcome, len(recipients))
	for i, rcpt := range recipients {
		out[i].Recipient = rcpt
	}
	ctx, cancel := context.WithTimeoutCause(ctx, m.cfg.Timeout, fmt.Errorf("no answer within %v", m.cfg.Timeout))
	defer cancel()
	c := m.client(from[strings.LastIndexByte(from, '@')+1:])
	for start := 0; start < len(recipients); start += maxRecipients {
		part := out[start:min(start+maxRecipients, len(recipients))]
		msg := mg.NewMIMEMessage(io.NopCloser(bytes.NewReader(raw)), recipients[start:start+len(part)]...)
		_, id, err := c.Send(ctx, msg)
		for i := range part {
			if err != nil {
				part[i].Err, part[i].Permanent = outcome(ctx, err)
			} else {
				// Mailgun's events name the message without angle brackets.
				part[i].ProviderID = strings.Trim(id, "<>")
			}
		}
	}
	return out
}

// Check reads the sending domain (GET {base}/domains/{domain}), which
// proves the key and the domain work; it sends nothing.
func (m *Mailgun) Check(ctx context.Context, domain string) (string, error) {
	res, err := m.client(domain).GetDomain(ctx, domain)
	if err != nil {
		e, _ := outcome(ctx, err)
		return "", e
	}
	return fmt.Sprintf("domain %s is %s", res.Domain.Name, res.Domain.State), nil
}

// outcome words a Mailgun error for delivery_error and says whether it is
// for good, by the status Mailgun answered
// (https://documentation.mailgun.com/docs/mailgun/api-reference/api-overview/#errors):
// 400 (a bad recipient or message) and 413 (too large) are; 429, 5xx and
// no answer are not; 401, 402, 403 and 404 (key, account, domain) are ours
// to fix: mail waits for the fix, flagged as our credentials.
func outcome(ctx context.Context, err error) (error, bool) {
	var re *mg.UnexpectedResponseError
	if !errors.As(err, &re) {
		if cause := context.Cause(ctx); cause != nil {
			err = cause
		}
		return fmt.Errorf("Mailgun: no answer: %w", err), false
	}
	msg := fmt.Sprintf("Mailgun %d: %s", re.Actual, reason(re.Data))
	switch s := re.Actual; {
	case s == http.StatusUnauthorized || s == http.StatusPaymentRequired || s == http.StatusForbidden || s == http.StatusNotFound:
		return core.Unauthorized("%s (check CALLSIGN_MAILGUN_API_KEY, CALLSIGN_MAILGUN_API_BASE and the sending domain)", msg), false
	case s == http.StatusTooManyRequests || s >= 500:
		return errors.New(msg), false
	default:
		return errors.New(msg), s >= 400
	}
}

// reason is Mailgun's {"message": …}, or the body itself, on one short line.
func reason(body []byte) string {
	var m struct{ Message string }
	text := string(body)
	if json.Unmarshal(body, &m) == nil && m.Message != "" {
		text = m.Message
	}
	text = strings.Join(strings.Fields(text), " ")
	if len(text) > 300 {
		text = strings.ToValidUTF8(text[:300], "") + "…"
	}
	return text
}
