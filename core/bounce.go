package core

import (
	"io"
	"strconv"
	"strings"
	"time"
)

// RecipientStatus is where an outgoing message is for one recipient.
type RecipientStatus string

const (
	RecipientQueued   RecipientStatus = "queued"   // not yet handed over
	RecipientSent     RecipientStatus = "sent"     // the next server (or our inbox) took it
	RecipientDeferred RecipientStatus = "deferred" // a temporary failure; tried again
	RecipientBounced  RecipientStatus = "bounced"  // refused for good, at once or by a later report
	// RecipientDelivered: a provider (SES, Mailgun) reports that the
	// recipient's own server took it, the last news we can have.
	RecipientDelivered RecipientStatus = "delivered"
)

// Recipient is one address of an outgoing message.
type Recipient struct {
	Email  string
	Status RecipientStatus
	// Error is the last SMTP reply or report's diagnostic; "" while none.
	Error string
	// ProviderID is the mail provider's id of the message it accepted for
	// this recipient (SES, Mailgun); "" through an SMTP relay.
	ProviderID string
}

// DeliveryBounced is a message every recipient of which bounced after it
// left (a delivery status notification came back for each).
const DeliveryBounced DeliveryStatus = "bounced"

// The envelope sender of outgoing mail is bounces+<token>@<domain>
// (VERP): a report sent back to it names the message whatever server
// sends it, however late. The token is random, stored with the message,
// and of letters and digits a server will not mangle (no case).
const (
	bounceLocalPrefix = "bounces+"
	BounceTokenLength = 20
	bounceAlphabet    = "abcdefghijklmnopqrstuvwxyz234567"
)

// NewBounceToken draws a message's token: 100 random bits.
func NewBounceToken(random io.Reader) (string, error) {
	return RandomString(random, BounceTokenLength, bounceAlphabet)
}

// BounceAddress is the envelope sender carrying token.
func BounceAddress(token, domain string) string {
	return bounceLocalPrefix + token + "@" + domain
}

// ParseBounceAddress returns the token of a VERP address; ok is false for
// any other address. Case is ignored: some servers lower- or upper-case
// the addresses they answer.
func ParseBounceAddress(addr string) (token string, ok bool) {
	local, _, ok := SplitAddress(strings.ToLower(strings.TrimSpace(addr)))
	if !ok || !strings.HasPrefix(local, bounceLocalPrefix) {
		return "", false
	}
	token = local[len(bounceLocalPrefix):]
	if len(token) != BounceTokenLength || strings.Trim(token, bounceAlphabet) != "" {
		return "", false
	}
	return token, true
}

// DSNAction is a delivery status notification's Action for one recipient
// (RFC 3464 §2.3.3).
type DSNAction string

const (
	DSNFailed    DSNAction = "failed"
	DSNDelayed   DSNAction = "delayed"
	DSNDelivered DSNAction = "delivered"
	DSNRelayed   DSNAction = "relayed"
	DSNExpanded  DSNAction = "expanded"
	// DSNComplained is no RFC 3464 action: a provider's feedback loop says
	// the recipient marked the message as spam. It changes no status.
	DSNComplained DSNAction = "complained"
)

// DSNRecipient is one recipient's part of a report.
type DSNRecipient struct {
	// FinalRecipient and OriginalRecipient are bare addresses ("" when absent).
	FinalRecipient    string
	OriginalRecipient string
	Action            DSNAction
	Status            string // the enhanced status code, "5.1.1"
	// Diagnostic is the remote server's reply, or the reporter's reason.
	Diagnostic string
	// BadAddress says the reporter itself judged the address bad, whatever
	// the codes (SES: a Permanent bounce; Mailgun: an address it suppresses).
	BadAddress bool
}

// DSN is a delivery status notification (RFC 3464) as read.
type DSN struct {
	ReportingMTA string
	Recipients   []DSNRecipient
	// OriginalMessageID is the returned message's Message-ID, when the
	// report includes it (without angle brackets).
	OriginalMessageID string
}

// Address is the recipient the report is about: the original recipient
// when the report names it, else the final one.
func (r DSNRecipient) Address() string {
	if r.OriginalRecipient != "" {
		return r.OriginalRecipient
	}
	return r.FinalRecipient
}

// Error is how a report's recipient shows in the message's recipients.
func (r DSNRecipient) Error() string {
	if r.Diagnostic != "" {
		return r.Diagnostic
	}
	return r.Status
}

// Codes are the reply codes that say why: the report's Status, or the
// diagnostic's enhanced code when Status is only a class ("5.0.0", as Exim
// writes it) and the diagnostic says more.
func (r DSNRecipient) Codes() (code int, enhanced string) {
	code, diagnosed := SplitReply(r.Diagnostic)
	enhanced = r.Status
	if !IsEnhancedStatus(enhanced) || strings.HasSuffix(enhanced, ".0.0") && diagnosed != "" && diagnosed[0] == enhanced[0] {
		enhanced = diagnosed
	}
	return code, enhanced
}

// Permanent reports whether a report says the recipient is lost for good:
// a failed action, or a 5.x.x status.
func (r DSNRecipient) Permanent() bool {
	return r.Action == DSNFailed || r.Action != DSNComplained && strings.HasPrefix(r.Status, "5.")
}

// Suppresses reports whether the line means we stop sending to the
// address: a complaint, or a permanent failure of the address itself
// (BadAddress, or codes SuppressesAddress names).
func (r DSNRecipient) Suppresses() bool {
	if r.Action == DSNComplained {
		return true
	}
	code, enhanced := r.Codes()
	return r.Permanent() && (r.BadAddress || SuppressesAddress(enhanced, code))
}

// SuppressionReason is what a suppression made by this line records.
func (r DSNRecipient) SuppressionReason() string {
	if r.Action == DSNComplained {
		return ComplaintReason
	}
	return r.Error()
}

// ComplaintReason is the reason of an address suppressed by a complaint.
const ComplaintReason = "complaint"

// DeliveryOutcome is what a mail provider says became of one recipient.
type DeliveryOutcome string

const (
	OutcomeDelivered  DeliveryOutcome = "delivered"  // the recipient's server took it
	OutcomeBounced    DeliveryOutcome = "bounced"    // refused (Permanent says for good)
	OutcomeDeferred   DeliveryOutcome = "deferred"   // delayed; the provider keeps trying
	OutcomeComplained DeliveryOutcome = "complained" // the recipient marked it as spam
)

// DeliveryReport is what a mail provider (SES through SNS, Mailgun's
// events) said about one recipient of a message we sent, provider-neutral:
// it is applied exactly as a bounce report sent to a bounce address is.
type DeliveryReport struct {
	// MessageID is the message's Message-ID, as we wrote it (no brackets).
	MessageID string
	Recipient string
	Outcome   DeliveryOutcome
	// Permanent says a bounce is for good; a temporary one is only recorded.
	Permanent bool
	// BadAddress says the provider judged the address itself bad.
	BadAddress bool
	// Status is the enhanced status code when the provider gives one.
	Status string
	// Reason is the remote server's reply or the provider's words.
	Reason   string
	Provider string // "ses", "mailgun"
}

// Outcome is what a line ApplyReport applied did: complained, delivered,
// or bounced.
func (r DSNRecipient) Outcome() DeliveryOutcome {
	switch {
	case r.Action == DSNComplained:
		return OutcomeComplained
	case r.Action == DSNDelivered && !r.Permanent():
		return OutcomeDelivered
	}
	return OutcomeBounced
}

// DSN is the report as one line of a delivery status notification, the
// form every report takes on its way to a message (ApplyReport).
func (r DeliveryReport) DSN() DSNRecipient {
	line := DSNRecipient{FinalRecipient: r.Recipient, Status: r.Status, Diagnostic: r.Reason, BadAddress: r.BadAddress}
	if line.Status == "" {
		_, line.Status = SplitReply(r.Reason) // "550 5.1.1 …"
	}
	switch {
	case r.Outcome == OutcomeDelivered:
		line.Action = DSNDelivered
	case r.Outcome == OutcomeComplained:
		line.Action = DSNComplained
	case r.Outcome == OutcomeBounced && r.Permanent:
		line.Action = DSNFailed
	default:
		line.Action = DSNDelayed
		if strings.HasPrefix(line.Status, "5.") {
			line.Status = "" // a temporary bounce whose code says otherwise stays temporary
		}
	}
	return line
}

// Delayed reports whether a report only says delivery is late (4.x.x).
func (r DSNRecipient) Delayed() bool {
	return !r.Permanent() && (r.Action == DSNDelayed || strings.HasPrefix(r.Status, "4."))
}

// NewRecipients lists a message's addresses, each queued.
func NewRecipients(addrs []string) []Recipient {
	out := make([]Recipient, len(addrs))
	for i, a := range addrs {
		out[i] = Recipient{Email: a, Status: RecipientQueued}
	}
	return out
}

// ApplyReport applies a delivery status notification to a sent message's
// recipients and status. Each reported recipient is found by address
// (ignoring case), or, when the report names no recipient the message has
// and the message has one, taken to be that one. A permanent failure
// bounces the recipient; a delay only records its error; a delivery marks
// a sent (or deferred) recipient delivered; a complaint changes nothing
// but is reported; other actions change nothing. The message becomes
// bounced once every recipient has bounced, if it had been sent (a
// message the relay refused at once stays failed). applied lists the
// lines that bounced a recipient, delivered one, or complained: what
// events and suppressions follow (ReportEvents); a repeated bounce or
// delivery is not listed again.
func ApplyReport(recipients []Recipient, status DeliveryStatus, report []DSNRecipient) (out []Recipient, newStatus DeliveryStatus, applied []DSNRecipient) {
	out = append([]Recipient(nil), recipients...)
	find := func(r DSNRecipient) int {
		for _, addr := range []string{r.OriginalRecipient, r.FinalRecipient} {
			for i, rc := range out {
				if addr != "" && strings.EqualFold(rc.Email, addr) {
					return i
				}
			}
		}
		if len(out) == 1 {
			return 0
		}
		return -1
	}
	for _, r := range report {
		i := find(r)
		switch {
		case i < 0:
		case r.Action == DSNComplained:
			applied = append(applied, r)
		case r.Permanent():
			if out[i].Status != RecipientBounced {
				applied = append(applied, r)
			}
			out[i].Status, out[i].Error = RecipientBounced, r.Error()
		case r.Delayed():
			out[i].Error = r.Error()
		case r.Action == DSNDelivered && (out[i].Status == RecipientSent || out[i].Status == RecipientDeferred):
			applied = append(applied, r)
			out[i].Status, out[i].Error = RecipientDelivered, ""
		}
	}
	newStatus = status
	if status == DeliverySent && len(out) > 0 {
		all := true
		for _, rc := range out {
			all = all && rc.Status == RecipientBounced
		}
		if all {
			newStatus = DeliveryBounced
		}
	}
	return out, newStatus, applied
}

// Suppression is an address the account no longer sends to: it bounced
// as one that does not exist.
type Suppression struct {
	AccountID  string
	IdentityID string // the identity whose message bounced
	Email      string
	// Reason is the reply or diagnostic that bounced it.
	Reason    string
	CreatedAt time.Time
}

// SuppressesAddress reports whether a permanent failure says the address
// itself is bad, so that sending to it again is pointless and harms the
// sender's standing: the enhanced status codes for a bad mailbox or
// domain (RFC 3463 X.1.1 bad mailbox, X.1.2 bad system, X.1.3 bad syntax,
// X.1.6 moved, X.1.10 null MX, X.2.1 disabled), or, when the reply has no
// enhanced code, 551 (not local) and 553 (mailbox name not allowed). A
// bare 550 is also how servers refuse spam, and other permanent failures
// (a policy refusal, a full mailbox, a message too large) say something
// about this one message: they suppress nothing.
func SuppressesAddress(enhanced string, code int) bool {
	switch enhanced {
	case "5.1.1", "5.1.2", "5.1.3", "5.1.6", "5.1.10", "5.2.1":
		return true
	case "":
		return code == 551 || code == 553
	}
	return false
}

// SplitReply reads the basic and enhanced codes at the front of an SMTP
// reply or a report's diagnostic ("smtp; 550 5.1.1 <a@b>: no such user"):
// 0 and "" where there are none.
func SplitReply(text string) (code int, enhanced string) {
	text = strings.TrimSpace(text)
	if kind, rest, ok := strings.Cut(text, ";"); ok && !strings.ContainsAny(kind, " \t") {
		text = strings.TrimSpace(rest) // the diagnostic-type, "smtp;"
	}
	fields := strings.Fields(text)
	if len(fields) == 0 {
		return 0, ""
	}
	first, rest, continued := strings.Cut(fields[0], "-") // "550-5.1.1": a line of a multi-line reply
	if n, err := strconv.Atoi(first); err == nil && n >= 200 && n < 600 {
		code = n
		fields = fields[1:]
		if continued && rest != "" {
			fields = append([]string{rest}, fields...)
		}
	}
	if len(fields) > 0 && IsEnhancedStatus(strings.TrimRight(fields[0], ",:")) {
		enhanced = strings.TrimRight(fields[0], ",:")
	}
	return code, enhanced
}

// IsEnhancedStatus reports whether s is an RFC 3463 code: class 2, 4 or 5,
// then two numbers of up to three digits.
func IsEnhancedStatus(s string) bool {
	parts := strings.Split(s, ".")
	if len(parts) != 3 || (parts[0] != "2" && parts[0] != "4" && parts[0] != "5") {
		return false
	}
	for _, p := range parts[1:] {
		if p == "" || len(p) > 3 || strings.Trim(p, "0123456789") != "" {
			return false
		}
	}
	return true
}
