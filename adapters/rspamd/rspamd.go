// Package rspamd is the spam filter adapter (ports.SpamChecker): rspamd's
// HTTP protocol on its controller (CALLSIGN_RSPAMD_URL), which answers
// /checkv2 and the learning routes /learnspam and /learnham. The address
// is the operator's, like the SMTP relay's, so it is dialled directly, not
// through the outbound-destination policy (which holds addresses users
// name: IMAP sources, webhooks).
package rspamd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// maxAnswer bounds what is read of one answer: a verdict lists a few
// dozen symbols.
const maxAnswer = 1 << 20

// Client talks to one rspamd controller.
type Client struct {
	base     string // without a trailing slash
	password string // the controller's; "" sends none
	http     *http.Client
}

var _ ports.SpamChecker = (*Client)(nil)

// New is a client of the controller at baseURL (http or https).
func New(baseURL, password string) *Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil // a controller on the operator's network
	t.MaxIdleConnsPerHost = 32
	return &Client{base: strings.TrimRight(baseURL, "/"), password: password, http: &http.Client{Transport: t}}
}

// answer is what /checkv2 says (the fields we read).
type answer struct {
	Score   float64                   `json:"score"`
	Action  string                    `json:"action"`
	Symbols map[string]symbolOfAnswer `json:"symbols"`
}

type symbolOfAnswer struct {
	Score float64 `json:"score"`
}

// Check implements ports.SpamChecker with rspamd's protocol headers: IP,
// Helo, From (the envelope sender) and one Rcpt per envelope recipient.
// Our own verdict (SPF, DKIM, DMARC) travels in the message, as the
// Authentication-Results field on top of it.
func (c *Client) Check(ctx context.Context, q ports.SpamQuery, raw []byte) (core.SpamVerdict, error) {
	req, err := c.request(ctx, "/checkv2", raw)
	if err != nil {
		return core.SpamVerdict{}, err
	}
	if q.IP != nil {
		req.Header.Set("IP", q.IP.String())
	}
	if q.HELO != "" {
		req.Header.Set("Helo", q.HELO)
	}
	if q.MailFrom != "" {
		req.Header.Set("From", q.MailFrom)
	}
	for _, r := range q.Recipients {
		req.Header.Add("Rcpt", r)
	}
	body, err := c.do(req)
	if err != nil {
		return core.SpamVerdict{}, err
	}
	var a answer
	if err := json.Unmarshal(body, &a); err != nil {
		return core.SpamVerdict{}, fmt.Errorf("rspamd: unreadable answer: %w", err)
	}
	if a.Action == "" {
		return core.SpamVerdict{}, fmt.Errorf("rspamd: an answer without an action")
	}
	v := core.SpamVerdict{Score: a.Score, Action: core.SpamAction(a.Action)}
	for name, s := range a.Symbols {
		v.Symbols = append(v.Symbols, core.SpamSymbol{Name: name, Score: s.Score})
	}
	return v.Bounded(), nil
}

// Learn implements ports.SpamChecker. rspamd answers 208 for a message it
// learned already the same way: that is learned too.
func (c *Client) Learn(ctx context.Context, spam bool, raw []byte) error {
	route := "/learnham"
	if spam {
		route = "/learnspam"
	}
	req, err := c.request(ctx, route, raw)
	if err != nil {
		return err
	}
	_, err = c.do(req)
	return err
}

func (c *Client) request(ctx context.Context, route string, raw []byte) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+route, bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	if c.password != "" {
		req.Header.Set("Password", c.password)
	}
	return req, nil
}

// do sends req and reads a 2xx answer's body; anything else is an error
// naming rspamd's reason (never the password).
func (c *Client) do(req *http.Request) ([]byte, error) {
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("rspamd: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return nil, fmt.Errorf("rspamd: reading the answer: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(body, &e)
		return nil, fmt.Errorf("rspamd: %s %s: %s", req.URL.Path, resp.Status, e.Error)
	}
	return body, nil
}
