package httpapi

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/mail"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
)

// The mail providers' webhooks (SES through Amazon SNS, Mailgun): each is
// checked by the provider's signature, then read into what the app takes
// from any mail door: a core.DeliveryReport about mail we sent
// (Outbox.Report, the path of a bounce sent to a bounce address), or a
// received message (Receiving.Deliver, the path of SMTP mail).

// MailgunSignatures checks Mailgun's webhook signatures (cmd gives
// adapters/mailgunsig). A missing, forged or stale signature is an error
// (Forbidden); replayed says the token was already taken: the webhook
// is answered as done and ignored.
type MailgunSignatures interface {
	Check(timestamp, token, signature string) (replayed bool, err error)
}

// SNSMessages checks Amazon SNS messages (cmd gives adapters/snsverify):
// Verify fails Forbidden for a message that is not signed by SNS for one
// of our topics; Confirm confirms a subscription, fetching only SNS URLs.
type SNSMessages interface {
	Verify(ctx context.Context, body []byte) error
	Confirm(ctx context.Context, subscribeURL string) error
}

// maxSNSBytes bounds an SNS post: SNS messages are at most 256 KiB, an
// SES receipt with its content in base64 somewhat less.
const maxSNSBytes = 1 << 20

var errProviderOff = core.Forbidden("This mail provider's webhooks are not configured here.")

// handled answers a provider's webhook once what it said is durable, or
// was refused for good (so the provider stops retrying): 200 with what
// was done.
func handled(c *gin.Context, what string) {
	c.JSON(http.StatusOK, gin.H{"detail": what})
}

// mailgunEvent is the part of a Mailgun event webhook we read
// (https://documentation.mailgun.com/docs/mailgun/user-manual/events/).
type mailgunEvent struct {
	Signature struct {
		Timestamp string `json:"timestamp"`
		Token     string `json:"token"`
		Signature string `json:"signature"`
	} `json:"signature"`
	EventData struct {
		Event          string `json:"event"`
		Severity       string `json:"severity"` // failed: permanent | temporary
		Reason         string `json:"reason"`   // failed: bounce, suppress-bounce, generic, …
		Recipient      string `json:"recipient"`
		DeliveryStatus struct {
			Code         int    `json:"code"`
			Message      string `json:"message"`
			Description  string `json:"description"`
			EnhancedCode string `json:"enhanced-code"`
		} `json:"delivery-status"`
		Message struct {
			Headers struct {
				MessageID string `json:"message-id"`
			} `json:"headers"`
		} `json:"message"`
	} `json:"event-data"`
}

// mailgunEvents takes Mailgun's delivered, failed and complained events.
func (s *server) mailgunEvents(c *gin.Context) {
	if s.mailgun == nil {
		s.fail(c, errProviderOff)
		return
	}
	var ev mailgunEvent
	body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, maxSNSBytes))
	if err == nil {
		err = json.Unmarshal(body, &ev)
	}
	if err != nil {
		s.fail(c, core.Invalid(core.NonFieldErrors, "Not a Mailgun event webhook."))
		return
	}
	sig := ev.Signature
	if replayed, err := s.mailgun.Check(sig.Timestamp, sig.Token, sig.Signature); err != nil || replayed {
		s.answerSignature(c, "mailgun", replayed, err)
		return
	}
	d := ev.EventData
	r := core.DeliveryReport{MessageID: d.Message.Headers.MessageID, Recipient: d.Recipient, Provider: "mailgun",
		Status: d.DeliveryStatus.EnhancedCode, Reason: mailgunReason(d.DeliveryStatus.Code, d.DeliveryStatus.Message, d.DeliveryStatus.Description, d.Reason)}
	switch d.Event {
	case "delivered":
		r.Outcome = core.OutcomeDelivered
	case "failed":
		r.Outcome, r.Permanent = core.OutcomeBounced, d.Severity == "permanent"
		// suppress-bounce: Mailgun refused to send, the address having bounced before.
		r.BadAddress = r.Permanent && d.Reason == "suppress-bounce"
	case "complained":
		r.Outcome = core.OutcomeComplained
	default:
		handled(c, "Event "+d.Event+" is not one this service follows.")
		return
	}
	s.report(c, r)
}

// mailgunReason is a failure's reply as SMTP would give it ("550 5.1.1
// …"), so the codes in it are read as a bounce report's are.
func mailgunReason(code int, message, description, reason string) string {
	text := strings.TrimSpace(message)
	if text == "" {
		text = strings.TrimSpace(description)
	}
	if code > 0 && !strings.HasPrefix(text, strconv.Itoa(code)) {
		text = strings.TrimSpace(strconv.Itoa(code) + " " + text)
	}
	if text == "" {
		text = reason
	}
	return text
}

// report applies a provider's report; a message we do not have is done
// with (logged), anything else not done is retried by the provider.
func (s *server) report(c *gin.Context, r core.DeliveryReport) {
	err := s.app.Outbox.Report(c.Request.Context(), r)
	switch {
	case core.KindOf(err) == core.KindNotFound:
		s.log.Info("a provider reported on a message we do not have", "provider", r.Provider, "message_id", r.MessageID, "outcome", string(r.Outcome))
		handled(c, "No such message here; ignored.")
	case err != nil:
		s.fail(c, unavailable(err))
	default:
		handled(c, "Recorded.")
	}
}

// unavailable turns a failure to store into 503, which providers retry.
func unavailable(err error) error {
	if k := core.KindOf(err); k == core.KindUnavailable || k == core.KindInvalid || k == core.KindTooLarge {
		return err
	}
	return core.Unavailable("Not stored; try again.")
}

// answerSignature answers a webhook whose signature did not let it in:
// 403 for a bad one; a replay is answered as done.
func (s *server) answerSignature(c *gin.Context, provider string, replayed bool, err error) {
	if replayed {
		s.log.Info("a replayed webhook was ignored", "provider", provider)
		handled(c, "Already received; ignored.")
		return
	}
	s.log.Warn("a provider webhook was refused", "provider", provider, "path", c.FullPath(), "err", err)
	s.fail(c, err)
}

// mailgunMIME takes a message a Mailgun route forwards to a URL ending in
// "mime": form fields recipient (the envelope recipient), sender,
// body-mime (the whole message), timestamp, token and signature
// (https://documentation.mailgun.com/docs/mailgun/user-manual/receive-forward-store/).
func (s *server) mailgunMIME(c *gin.Context) {
	if s.mailgun == nil {
		s.fail(c, errProviderOff)
		return
	}
	r := c.Request
	r.Body = http.MaxBytesReader(c.Writer, r.Body, s.maxUpload+1<<20)
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt == "multipart/form-data" {
		if err := r.ParseMultipartForm(8 << 20); err != nil {
			s.fail(c, formError(err))
			return
		}
	} else if err := r.ParseForm(); err != nil {
		s.fail(c, formError(err))
		return
	}
	if replayed, err := s.mailgun.Check(r.PostFormValue("timestamp"), r.PostFormValue("token"), r.PostFormValue("signature")); err != nil || replayed {
		s.answerSignature(c, "mailgun", replayed, err)
		return
	}
	raw := []byte(r.PostFormValue("body-mime"))
	if len(raw) == 0 {
		s.fail(c, core.Invalid("body-mime", "Mailgun posts the message as body-mime only to a route URL ending in mime."))
		return
	}
	head := headerOf(raw)
	auth := core.ProviderAuthentication(mailgunResult(firstOf(r.PostFormValue("X-Mailgun-Spf"), head.Get("X-Mailgun-Spf"))),
		mailgunResult(firstOf(r.PostFormValue("X-Mailgun-Dkim-Check-Result"), head.Get("X-Mailgun-Dkim-Check-Result"))), core.AuthNone)
	s.receive(c, "mailgun", r.PostFormValue("sender"), strings.Split(r.PostFormValue("recipient"), ","), raw, auth)
}

func formError(err error) error {
	var maxErr *http.MaxBytesError
	if errors.As(err, &maxErr) {
		return core.TooLarge("The message is too large.")
	}
	return core.Invalid(core.NonFieldErrors, "Unreadable form.")
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// headerOf is a message's top header block (empty when unreadable).
func headerOf(raw []byte) mail.Header {
	m, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		return mail.Header{}
	}
	return m.Header
}

// mailgunResult reads Mailgun's Pass, Fail, SoftFail, Neutral, None.
func mailgunResult(s string) core.AuthResult {
	if r, ok := core.ParseAuthResult(strings.ToLower(strings.TrimSpace(s))); ok {
		return r
	}
	return core.AuthNone
}

// receive delivers a message a provider received for us, once per
// inbox its envelope recipients name, through the one delivery path.
// Recipients we do not serve are logged and answered as done (the
// provider would retry forever); a failure to store is 503 (it retries).
func (s *server) receive(c *gin.Context, provider, sender string, rcpts []string, raw []byte, auth core.Authentication) {
	ctx := c.Request.Context()
	in := app.InboundMail{EnvelopeFrom: sender, Raw: raw, Provider: &app.ProviderReceipt{Name: provider, Authentication: auth}}
	for _, rcpt := range rcpts {
		rcpt = strings.TrimSpace(rcpt)
		if rcpt == "" {
			continue
		}
		// The envelope sender is judged with the message, by its From
		// (Deliver): refused mail is stored blocked, not bounced.
		inbox, err := s.app.Receiving.ResolveRecipient(ctx, "", rcpt)
		switch k := core.KindOf(err); {
		case err == nil:
			in.Inboxes = append(in.Inboxes, inbox)
			in.Envelope = append(in.Envelope, rcpt)
		case k == core.KindNotFound || k == core.KindForbidden || k == core.KindInvalid:
			s.log.Warn("provider mail for a recipient we do not serve", "provider", provider, "recipient", rcpt)
		default:
			s.fail(c, unavailable(err))
			return
		}
	}
	if len(in.Inboxes) == 0 {
		handled(c, "No recipient served here; dropped.")
		return
	}
	stored, err := s.app.Receiving.Deliver(ctx, in)
	if err != nil {
		s.log.Error("provider mail not stored", "provider", provider, "err", err)
		s.fail(c, unavailable(err))
		return
	}
	c.JSON(http.StatusOK, gin.H{"detail": "Stored.", "stored": len(stored)})
}

// snsEnvelope is what we read of an SNS message once it is verified.
type snsEnvelope struct {
	Type         string
	Message      string
	SubscribeURL string
	TopicArn     string
}

// sesWebhook takes what SES publishes through SNS: subscription
// confirmations, Delivery, Bounce and Complaint notifications, and
// Received notifications of a receipt rule's SNS action.
func (s *server) sesWebhook(c *gin.Context) {
	if s.sns == nil {
		s.fail(c, errProviderOff)
		return
	}
	ctx := c.Request.Context()
	body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, maxSNSBytes))
	if err != nil {
		s.fail(c, core.TooLarge("An SNS message is at most 256 KB."))
		return
	}
	if err := s.sns.Verify(ctx, body); err != nil {
		s.answerSignature(c, "ses", false, err)
		return
	}
	var env snsEnvelope
	_ = json.Unmarshal(body, &env) // Verify read it already
	switch env.Type {
	case "SubscriptionConfirmation":
		if err := s.sns.Confirm(ctx, env.SubscribeURL); err != nil {
			s.log.Warn("an SNS subscription was not confirmed", "topic", env.TopicArn, "err", err)
			s.fail(c, core.Forbidden("The subscription was not confirmed: %v", err))
			return
		}
		s.log.Info("SNS subscription confirmed", "topic", env.TopicArn)
		handled(c, "Subscription confirmed.")
	case "Notification":
		s.sesNotification(c, []byte(env.Message))
	default: // UnsubscribeConfirmation
		s.log.Info("SNS message ignored", "type", env.Type, "topic", env.TopicArn)
		handled(c, "Ignored.")
	}
}

// sesMessage is an SES notification (the SNS message's Message), of the
// fields we read
// (https://docs.aws.amazon.com/ses/latest/dg/notification-contents.html,
// https://docs.aws.amazon.com/ses/latest/dg/receiving-email-notifications-contents.html).
// Event publishing names the type eventType rather than notificationType.
type sesMessage struct {
	NotificationType string `json:"notificationType"`
	EventType        string `json:"eventType"`
	Mail             struct {
		Source        string `json:"source"`
		CommonHeaders struct {
			MessageID string `json:"messageId"`
		} `json:"commonHeaders"`
		Headers []struct{ Name, Value string } `json:"headers"`
	} `json:"mail"`
	Bounce struct {
		BounceType        string `json:"bounceType"` // Permanent | Transient | Undetermined
		BouncedRecipients []struct {
			EmailAddress   string `json:"emailAddress"`
			Status         string `json:"status"`
			DiagnosticCode string `json:"diagnosticCode"`
		} `json:"bouncedRecipients"`
	} `json:"bounce"`
	Complaint struct {
		ComplainedRecipients []struct {
			EmailAddress string `json:"emailAddress"`
		} `json:"complainedRecipients"`
		ComplaintFeedbackType string `json:"complaintFeedbackType"`
	} `json:"complaint"`
	Delivery struct {
		Recipients   []string `json:"recipients"`
		SMTPResponse string   `json:"smtpResponse"`
	} `json:"delivery"`
	Receipt struct {
		Recipients   []string   `json:"recipients"`
		SPFVerdict   sesVerdict `json:"spfVerdict"`
		DKIMVerdict  sesVerdict `json:"dkimVerdict"`
		DMARCVerdict sesVerdict `json:"dmarcVerdict"`
		Action       struct {
			Type     string `json:"type"`
			Encoding string `json:"encoding"` // BASE64 | UTF8
		} `json:"action"`
	} `json:"receipt"`
	Content string `json:"content"`
}

type sesVerdict struct {
	Status string `json:"status"` // PASS | FAIL | GRAY | PROCESSING_FAILED
}

// result reads an SES verdict as an RFC 8601 word.
func (v sesVerdict) result() core.AuthResult {
	switch v.Status {
	case "PASS":
		return core.AuthPass
	case "FAIL":
		return core.AuthFail
	case "PROCESSING_FAILED":
		return core.AuthTempError
	}
	return core.AuthNone // GRAY: nothing to check
}

// messageID is the Message-ID of the mail a notification is about: ours,
// as we wrote it (commonHeaders), else from the headers SES lists.
func (m sesMessage) messageID() string {
	if id := m.Mail.CommonHeaders.MessageID; id != "" {
		return id
	}
	for _, h := range m.Mail.Headers {
		if strings.EqualFold(h.Name, "Message-ID") {
			return h.Value
		}
	}
	return ""
}

func (s *server) sesNotification(c *gin.Context, body []byte) {
	var n sesMessage
	if err := json.Unmarshal(body, &n); err != nil {
		s.fail(c, core.Invalid(core.NonFieldErrors, "Not an SES notification."))
		return
	}
	kind := firstOf(n.NotificationType, n.EventType)
	var reports []core.DeliveryReport
	base := core.DeliveryReport{MessageID: n.messageID(), Provider: "ses"}
	switch kind {
	case "Received":
		s.sesReceived(c, n)
		return
	case "Delivery":
		for _, rcpt := range n.Delivery.Recipients {
			r := base
			r.Recipient, r.Outcome, r.Reason = rcpt, core.OutcomeDelivered, n.Delivery.SMTPResponse
			reports = append(reports, r)
		}
	case "Bounce":
		for _, b := range n.Bounce.BouncedRecipients {
			r := base
			r.Recipient, r.Outcome, r.Status, r.Reason = b.EmailAddress, core.OutcomeBounced, b.Status, firstOf(b.DiagnosticCode, n.Bounce.BounceType)
			// SES: a Permanent bounce means remove the address from your lists.
			r.Permanent = n.Bounce.BounceType == "Permanent"
			r.BadAddress = r.Permanent
			reports = append(reports, r)
		}
	case "Complaint":
		for _, cr := range n.Complaint.ComplainedRecipients {
			r := base
			r.Recipient, r.Outcome, r.Reason = cr.EmailAddress, core.OutcomeComplained, n.Complaint.ComplaintFeedbackType
			reports = append(reports, r)
		}
	default:
		handled(c, "Notification "+kind+" is not one this service follows.")
		return
	}
	for _, r := range reports {
		if err := s.app.Outbox.Report(c.Request.Context(), r); err != nil && core.KindOf(err) != core.KindNotFound {
			s.fail(c, unavailable(err))
			return
		} else if err != nil {
			s.log.Info("a provider reported on a message we do not have", "provider", "ses", "message_id", r.MessageID)
		}
	}
	handled(c, "Recorded.")
}

// sesReceived stores the message of a receipt rule's SNS action.
func (s *server) sesReceived(c *gin.Context, n sesMessage) {
	if n.Content == "" {
		// An S3 or Lambda action's notification carries no message; SES
		// bounces mail over 150 KB that an SNS action would carry.
		s.log.Warn("an SES receipt without content was ignored: use the SNS action", "action", n.Receipt.Action.Type)
		handled(c, "No content; ignored.")
		return
	}
	raw := []byte(n.Content)
	if strings.EqualFold(n.Receipt.Action.Encoding, "BASE64") {
		var err error
		if raw, err = base64.StdEncoding.DecodeString(n.Content); err != nil {
			s.fail(c, core.Invalid("content", "Not base64."))
			return
		}
	}
	r := n.Receipt
	auth := core.ProviderAuthentication(r.SPFVerdict.result(), r.DKIMVerdict.result(), r.DMARCVerdict.result())
	s.receive(c, "ses", n.Mail.Source, r.Recipients, raw, auth)
}
