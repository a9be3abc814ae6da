// Package ses sends outbound mail through Amazon SES, implementing
// ports.MailRelay with the SES API v2 (aws-sdk-go-v2/service/sesv2):
// SendEmail with Content.Raw carries our exact bytes, DKIM signature
// included, to the envelope recipients.
package ses

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	"github.com/aws/aws-sdk-go-v2/service/sesv2/types"
	"github.com/aws/smithy-go"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// maxRecipients is how many destinations SES takes in one SendEmail
// (https://docs.aws.amazon.com/ses/latest/dg/quotas.html); more are sent
// in several requests of the same bytes.
const maxRecipients = 50

// Config says how to reach SES. Credentials come from the SDK's default
// chain (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY/AWS_SESSION_TOKEN, the
// shared config files, a role).
type Config struct {
	Region string
	// Endpoint replaces AWS's endpoint for the region ("" keeps it): an
	// SES-compatible service, or a fake in tests.
	Endpoint string
	// ConfigurationSet names the SES configuration set to send with
	// (event destinations, dedicated IPs); "" sends without one.
	ConfigurationSet string
	// Timeout bounds one Relay call; 0 means 2 minutes.
	Timeout time.Duration
}

// SES is a ports.MailRelay backed by an SES account.
type SES struct {
	client  *sesv2.Client
	cfg     Config
	timeout time.Duration
}

var _ ports.MailRelay = (*SES)(nil)

// New builds the client. It asks nothing of AWS: the credentials are
// looked up when first needed, so bad ones show on the first send (or in
// `callsign doctor`).
func New(ctx context.Context, cfg Config) (*SES, error) {
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, config.WithRegion(cfg.Region),
		config.WithHTTPClient(awshttp.NewBuildableClient().WithTimeout(timeout)),
		// The outbox retries with its own backoff and records each
		// attempt; the SDK's retries would hide them and stretch one.
		config.WithRetryer(func() aws.Retryer { return aws.NopRetryer{} }))
	if err != nil {
		return nil, fmt.Errorf("loading the AWS configuration: %w", err)
	}
	client := sesv2.NewFromConfig(awsCfg, func(o *sesv2.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
	})
	return &SES{client: client, cfg: cfg, timeout: timeout}, nil
}

// Relay sends raw to the recipients, at most 50 to a request. The envelope
// sender (our VERP address) is the FromEmailAddress, so that SES's
// feedback forwarding, when on, returns bounces to it.
func (s *SES) Relay(ctx context.Context, from string, recipients []string, raw []byte) []ports.RelayOutcome {
	out := make([]ports.RelayOutcome, len(recipients))
	for i, rcpt := range recipients {
		out[i].Recipient = rcpt
	}
	ctx, cancel := context.WithTimeoutCause(ctx, s.timeout, fmt.Errorf("no answer within %v", s.timeout))
	defer cancel()
	for start := 0; start < len(recipients); start += maxRecipients {
		part := out[start:min(start+maxRecipients, len(recipients))]
		in := &sesv2.SendEmailInput{
			Content:          &types.EmailContent{Raw: &types.RawMessage{Data: raw}},
			Destination:      &types.Destination{ToAddresses: recipients[start : start+len(part)]},
			FromEmailAddress: aws.String(from),
		}
		if s.cfg.ConfigurationSet != "" {
			in.ConfigurationSetName = aws.String(s.cfg.ConfigurationSet)
		}
		res, err := s.client.SendEmail(ctx, in)
		for i := range part {
			if err != nil {
				part[i].Err, part[i].Permanent = outcome(ctx, err)
			} else {
				part[i].ProviderID = aws.ToString(res.MessageId)
			}
		}
	}
	return out
}

// Check reads the account (GetAccount), which proves the credentials and
// region work; it sends nothing. It says whether sending is enabled and
// what the quota is.
func (s *SES) Check(ctx context.Context) (string, error) {
	res, err := s.client.GetAccount(ctx, &sesv2.GetAccountInput{})
	if err != nil {
		e, _ := outcome(ctx, err)
		return "", e
	}
	mode := "sandbox (only verified recipients)"
	if res.ProductionAccessEnabled {
		mode = "production"
	}
	detail := fmt.Sprintf("%s account, sending %s", mode, map[bool]string{true: "enabled", false: "PAUSED"}[res.SendingEnabled])
	if q := res.SendQuota; q != nil {
		detail += fmt.Sprintf(", %.0f of %.0f messages sent in 24 h, %.0f/s", q.SentLast24Hours, q.Max24HourSend, q.MaxSendRate)
	}
	return detail, nil
}

// Which SES errors are ours to fix (the account, the identity, the
// configuration set, the credentials): mail waits for the fix, as it does
// for a relay that refuses our password, and the outbox says so loudly.
var configurationErrors = map[string]bool{
	"AccountSuspendedException": true, "SendingPausedException": true, "MailFromDomainNotVerifiedException": true,
	"NotFoundException": true, "AccessDeniedException": true, "UnrecognizedClientException": true,
	"InvalidClientTokenId": true, "SignatureDoesNotMatch": true, "ExpiredTokenException": true, "IncompleteSignature": true,
}

// outcome words an SES error for delivery_error and says whether it is
// for good: SES refusing the content or a recipient (MessageRejected,
// BadRequestException) is; throttling (TooManyRequestsException,
// LimitExceededException), SES's own failures (5xx) and no answer are not.
func outcome(ctx context.Context, err error) (error, bool) {
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) {
		if cause := context.Cause(ctx); cause != nil {
			err = cause
		}
		return fmt.Errorf("SES: no answer: %w", err), false
	}
	code := apiErr.ErrorCode()
	msg := fmt.Sprintf("SES %s: %s", code, strings.Join(strings.Fields(apiErr.ErrorMessage()), " "))
	var status int
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	switch {
	case configurationErrors[code] || status == http.StatusUnauthorized || status == http.StatusForbidden:
		return core.Unauthorized("%s (check the SES settings and AWS credentials)", msg), false
	case code == "MessageRejected" || code == "BadRequestException":
		return errors.New(msg), true
	default:
		return errors.New(msg), false
	}
}
