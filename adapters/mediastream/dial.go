package mediastream

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/callsign/callsign/core"
)

// MaxMessageBytes is the largest message read from either side (a 20 ms
// frame is about 400 bytes); a bigger one ends the call.
const MaxMessageBytes = 16 << 10

// DefaultDialTimeout bounds the agent's connect and handshake.
const DefaultDialTimeout = 5 * time.Second

// maxSignatureAge is how old a signed upgrade VerifyAgentRequest accepts
// (either way), as Standard Webhooks suggest.
const maxSignatureAge = 5 * time.Minute

// Accept takes the provider's WebSocket upgrade; the caller has checked
// the request is the provider's.
func Accept(w http.ResponseWriter, r *http.Request) (*websocket.Conn, error) {
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		return nil, err
	}
	c.SetReadLimit(MaxMessageBytes)
	return c, nil
}

// DialOptions are how DialAgent reaches the agent.
type DialOptions struct {
	// Secrets sign the upgrade ("whsec_…": the current one, and the
	// previous during a rotation).
	Secrets []string
	// DialContext is the outbound-destination policy's dial; nil dials
	// directly (tests).
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
	// Timeout bounds connect and handshake; 0 means DefaultDialTimeout.
	Timeout time.Duration
	Now     func() time.Time
}

// DialError is a failed agent dial, named by category ("refused
// destination: …", "timeout", "connect", "status 403", …), never with the
// remote's words.
type DialError struct{ Category string }

func (e *DialError) Error() string { return "agent unreachable: " + e.Category }

// DialAgent opens the agent's WebSocket at rawURL (ws:// or wss://),
// signed as Callsign's webhooks are: headers webhook-id, webhook-timestamp
// and webhook-signature over "{id}.{timestamp}.GET {rawURL}".
func DialAgent(ctx context.Context, rawURL string, opts DialOptions) (*websocket.Conn, error) {
	if u, err := url.Parse(rawURL); err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
		return nil, &DialError{Category: "invalid url"}
	}
	timeout := cmp.Or(opts.Timeout, DefaultDialTimeout)
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	dial := opts.DialContext
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tr := &http.Transport{DialContext: dial, Proxy: nil, TLSHandshakeTimeout: timeout}
	defer tr.CloseIdleConnections() // a refused handshake may leave its connection idle
	client := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	c, res, err := websocket.Dial(ctx, rawURL, &websocket.DialOptions{HTTPClient: client,
		HTTPHeader: SignedUpgradeHeader(opts.Secrets, rawURL, now()), CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		return nil, &DialError{Category: dialCategory(res, err)}
	}
	c.SetReadLimit(MaxMessageBytes)
	return c, nil
}

// SignedUpgradeHeader is the Standard Webhooks headers of a GET of rawURL
// at now.
func SignedUpgradeHeader(secrets []string, rawURL string, now time.Time) http.Header {
	id := make([]byte, 12)
	_, _ = rand.Read(id) // never fails
	msgID := "msg_" + hex.EncodeToString(id)
	ts := now.Unix()
	h := http.Header{}
	h.Set("webhook-id", msgID)
	h.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	h.Set("webhook-signature", core.SignWebhook(secrets, msgID, ts, []byte(http.MethodGet+" "+rawURL)))
	return h
}

// VerifyAgentRequest is the agent's check of an upgrade DialAgent made to
// rawURL (the URL exactly as configured): signed with secret, within five
// minutes of now.
func VerifyAgentRequest(r *http.Request, rawURL, secret string, now time.Time) error {
	id, tsText := r.Header.Get("webhook-id"), r.Header.Get("webhook-timestamp")
	ts, err := strconv.ParseInt(tsText, 10, 64)
	if id == "" || err != nil {
		return errors.New("missing webhook-id or webhook-timestamp")
	}
	if age := now.Sub(time.Unix(ts, 0)); age > maxSignatureAge || age < -maxSignatureAge {
		return errors.New("webhook-timestamp too far from now")
	}
	want := core.SignWebhook([]string{secret}, id, ts, []byte(r.Method+" "+rawURL))
	for _, got := range strings.Fields(r.Header.Get("webhook-signature")) {
		if hmac.Equal([]byte(got), []byte(want)) {
			return nil
		}
	}
	return errors.New("no matching webhook-signature")
}

// dialCategory names why a dial failed.
func dialCategory(res *http.Response, err error) string {
	var refused *core.DestinationError
	var dnsErr *net.DNSError
	var netErr net.Error
	switch {
	case res != nil:
		return fmt.Sprintf("status %d", res.StatusCode)
	case errors.As(err, &refused):
		return "refused destination: " + refused.Error()
	case errors.As(err, &dnsErr):
		return "dns: the host has no address"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return "timeout"
	}
	return "connect"
}
