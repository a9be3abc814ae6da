package server

import (
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/callsign/callsign/adapters/egress"
	"github.com/callsign/callsign/adapters/httpapi"
	"github.com/callsign/callsign/adapters/mailgunsig"
	"github.com/callsign/callsign/adapters/snsverify"
	"github.com/callsign/callsign/config"
	"github.com/callsign/callsign/core"
)

// useMailProviderHooks gives the API the checks of the mail providers'
// webhooks that configuration turns on; without them those webhooks are
// refused.
func useMailProviderHooks(cfg config.Config, opts *httpapi.Options) error {
	if cfg.MailgunWebhookSigningKey != "" {
		opts.Mailgun = mailgunsig.New(cfg.MailgunWebhookSigningKey, nil)
	}
	if len(cfg.SNSTopicARNs) == 0 {
		return nil
	}
	o := snsverify.Options{TopicARNs: cfg.SNSTopicARNs}
	if cfg.SNSCertFile != "" {
		pem, err := os.ReadFile(cfg.SNSCertFile)
		if err != nil {
			return fmt.Errorf("CALLSIGN_SNS_CERT_FILE: %w", err)
		}
		o.CertPEM = pem
	} else {
		// Certificates and subscription confirmations are fetched from
		// SNS's public hosts only: through the outbound-destination
		// policy, no private address, whatever the name resolves to.
		out := egress.New(core.DestinationPolicy{}, nil)
		o.Client = &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{DialContext: out.DialContext, TLSHandshakeTimeout: 10 * time.Second},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	v, err := snsverify.New(o)
	if err != nil {
		return fmt.Errorf("CALLSIGN_SNS_CERT_FILE: %w", err)
	}
	opts.SNS = v
	return nil
}
