// Package webhook makes webhook requests: http(s) POSTs through a dialer
// that holds every connection to the outbound-destination policy (cmd
// gives it adapters/egress's), without redirects, within
// core.WebhookTimeout. Failures are reported as categories, never with the
// remote's words.
package webhook

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// Options are the policy's two doors: the dial of a checked address, and
// the check of a name alone (for a URL given to the API).
type Options struct {
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
	Resolve     func(ctx context.Context, host string) error
}

// Sender implements ports.WebhookSender.
type Sender struct {
	opts   Options
	client *http.Client
}

// New makes a sender.
func New(opts Options) *Sender {
	tr := &http.Transport{DialContext: opts.DialContext, Proxy: nil, MaxIdleConnsPerHost: 4, ForceAttemptHTTP2: true,
		TLSHandshakeTimeout: core.WebhookTimeout, ResponseHeaderTimeout: core.WebhookTimeout}
	return &Sender{opts: opts, client: &http.Client{Transport: tr, Timeout: core.WebhookTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// Check implements ports.WebhookSender.
func (s *Sender) Check(ctx context.Context, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil {
		return core.Invalid("url", "Enter an absolute http or https URL without credentials.")
	}
	if err := s.opts.Resolve(ctx, u.Hostname()); err != nil {
		var refused *core.DestinationError
		if errors.As(err, &refused) {
			return core.Invalid("url", "%s", refused.Error())
		}
		return core.Invalid("url", "The host %s has no address.", u.Hostname())
	}
	return nil
}

// Send implements ports.WebhookSender.
func (s *Sender) Send(ctx context.Context, raw string, headers map[string]string, body []byte) (ports.WebhookAnswer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, raw, bytes.NewReader(body))
	if err != nil {
		return ports.WebhookAnswer{}, errors.New("invalid url")
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Callsign-Webhooks/1")
	answer := ports.WebhookAnswer{Sent: req.Header.Clone()}
	res, err := s.client.Do(req)
	if err != nil {
		return answer, errors.New(category(err))
	}
	defer res.Body.Close()
	answer.StatusCode, answer.Headers = res.StatusCode, res.Header
	// What a person debugging the endpoint reads: a bounded start; a body
	// cut short by a slow or broken endpoint is kept as far as it came.
	answer.Body, _ = io.ReadAll(io.LimitReader(res.Body, core.WebhookExchangeLimit))
	return answer, nil
}

// category names a failure without the remote's words.
func category(err error) string {
	var refused *core.DestinationError
	var dnsErr *net.DNSError
	var netErr net.Error
	switch {
	case errors.As(err, &refused):
		return "refused destination: " + refused.Error()
	case errors.As(err, &dnsErr):
		return "dns: the host has no address"
	case errors.As(err, &netErr) && netErr.Timeout():
		return "timeout"
	case strings.Contains(err.Error(), "tls") || strings.Contains(err.Error(), "x509"):
		return "tls"
	}
	return "connect"
}
