// Package sestest stands in for Amazon SES in tests: an HTTP server that
// answers the two SES API v2 calls Callsign makes, checking each request
// against AWS's published reference, not against our adapter.
//
// SendEmail — https://docs.aws.amazon.com/ses/latest/APIReference-V2/API_SendEmail.html:
// POST /v2/email/outbound-emails, Content-Type application/json, signed
// with Signature Version 4 for service "ses" in the configured region
// (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv-signing-elements.html:
// Authorization "AWS4-HMAC-SHA256 Credential=AKID/yyyymmdd/region/ses/aws4_request,
// SignedHeaders=…host…x-amz-date…, Signature=…" and X-Amz-Date); the body's
// Content.Raw.Data is the base64 message (required, at most 40 MB),
// Destination.ToAddresses/CcAddresses/BccAddresses together at most 50,
// FromEmailAddress and ConfigurationSetName optional strings. The answer is
// 200 {"MessageId": "…"}; errors are the status with the X-Amzn-ErrorType
// header and {"message": "…"} (MessageRejected 400, TooManyRequestsException
// 429, BadRequestException 400, NotFoundException 404).
//
// GetAccount — https://docs.aws.amazon.com/ses/latest/APIReference-V2/API_GetAccount.html:
// GET /v2/email/account, signed the same way; the answer has SendQuota,
// SendingEnabled and ProductionAccessEnabled.
package sestest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/callsign/callsign/adapters/transporttest"
)

// Credentials and region the fake accepts; tests give them to the SDK.
const (
	AccessKeyID     = "AKIDCALLSIGNTEST0001"
	SecretAccessKey = "callsign-test-secret-0123456789abcdefghij"
	Region          = "eu-west-1"
)

// Sent is one accepted SendEmail: its destinations and raw bytes, and
// the sender, configuration set and id that went with them.
type Sent struct {
	transporttest.Sent
	From             string
	ConfigurationSet string
	MessageID        string
}

// Server is the fake. Its zero value is ready; serve it with httptest.
// What it answers to sends (transporttest.Answer: Throttle is a 429
// TooManyRequestsException, Fail a 500 InternalFailure, Refuse a 400
// MessageRejected with Reason) and what it kept are set and read through
// the embedded Sends.
type Server struct {
	transporttest.Sends[Sent]
	// Reason is the text of a MessageRejected; "" says SES's usual one.
	Reason string
}

var authorization = regexp.MustCompile(`^AWS4-HMAC-SHA256 Credential=([^/]+)/\d{8}/([^/]+)/ses/aws4_request, ?SignedHeaders=([a-z0-9;-]+), ?Signature=[0-9a-f]{64}$`)

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if problem, status, code := checkSigned(r); problem != "" {
		if code == "IncompleteSignature" { // a malformed request, not a wrong key
			s.Problem(problem)
		}
		answerError(w, status, code, problem)
		return
	}
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v2/email/outbound-emails":
		s.sendEmail(w, r)
	case r.Method == http.MethodGet && r.URL.Path == "/v2/email/account":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"SendQuota":{"Max24HourSend":50000,"MaxSendRate":14,"SentLast24Hours":12},"SendingEnabled":true,"ProductionAccessEnabled":true,"EnforcementStatus":"HEALTHY"}`)
	default:
		s.Problem(r.Method + " " + r.URL.Path + " is not an SES v2 call the adapter makes")
		answerError(w, http.StatusNotFound, "NotFoundException", "no such operation")
	}
}

// checkSigned holds a request to Signature Version 4 with our key and region.
func checkSigned(r *http.Request) (problem string, status int, code string) {
	m := authorization.FindStringSubmatch(r.Header.Get("Authorization"))
	switch {
	case m == nil:
		return "Authorization is not a SigV4 header for service ses: " + r.Header.Get("Authorization"), http.StatusForbidden, "IncompleteSignature"
	case m[1] != AccessKeyID:
		return "unknown access key " + m[1], http.StatusForbidden, "UnrecognizedClientException"
	case m[2] != Region:
		return "signed for region " + m[2] + ", not " + Region, http.StatusForbidden, "SignatureDoesNotMatch"
	case !strings.Contains(";"+m[3]+";", ";host;") || !strings.Contains(";"+m[3]+";", ";x-amz-date;") || r.Header.Get("X-Amz-Date") == "":
		return "SignedHeaders lack host or x-amz-date: " + m[3], http.StatusForbidden, "IncompleteSignature"
	}
	return "", 0, ""
}

func (s *Server) sendEmail(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Content *struct {
			Raw *struct {
				Data []byte // base64 in JSON, as encoding/json reads []byte
			}
			Simple, Template json.RawMessage
		}
		Destination *struct {
			ToAddresses, CcAddresses, BccAddresses []string
		}
		FromEmailAddress     *string
		ConfigurationSetName *string
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		s.Problem("Content-Type " + ct + ", want application/json")
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		s.Problem("body: " + err.Error())
		answerError(w, 400, "BadRequestException", "malformed JSON")
		return
	}
	var rcpts []string
	if in.Destination != nil {
		rcpts = append(append(append(rcpts, in.Destination.ToAddresses...), in.Destination.CcAddresses...), in.Destination.BccAddresses...)
	}
	switch {
	case in.Content == nil || in.Content.Raw == nil || len(in.Content.Raw.Data) == 0:
		s.Problem("Content.Raw.Data is missing: our bytes must go as a raw message")
		answerError(w, 400, "BadRequestException", "Content is required")
		return
	case in.Content.Simple != nil || in.Content.Template != nil:
		s.Problem("Content has Simple or Template beside Raw")
	case len(rcpts) == 0 || len(rcpts) > 50:
		s.Problem(fmt.Sprintf("%d destinations; SES takes 1 to 50", len(rcpts)))
		answerError(w, 400, "BadRequestException", "too many recipients")
		return
	}
	switch s.Next() {
	case transporttest.Throttle:
		answerError(w, http.StatusTooManyRequests, "TooManyRequestsException", "Maximum sending rate exceeded.")
		return
	case transporttest.Fail:
		answerError(w, http.StatusInternalServerError, "InternalFailure", "internal failure")
		return
	case transporttest.Refuse:
		reason := s.Reason
		if reason == "" {
			reason = "Email address is not verified."
		}
		answerError(w, http.StatusBadRequest, "MessageRejected", reason)
		return
	case transporttest.Unreachable:
		transporttest.HangUp(w)
		return
	}
	sent := s.Keep(r.Context(), func(seq int) Sent {
		sent := Sent{Sent: transporttest.Sent{Recipients: rcpts, Raw: in.Content.Raw.Data},
			MessageID: fmt.Sprintf("0100018c%08x-callsign-fake-%06d", seq, seq)}
		if in.FromEmailAddress != nil {
			sent.From = *in.FromEmailAddress
		}
		if in.ConfigurationSetName != nil {
			sent.ConfigurationSet = *in.ConfigurationSetName
		}
		return sent
	})
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]string{"MessageId": sent.MessageID})
}

// answerError answers as SES's REST-JSON protocol does.
func answerError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-ErrorType", code)
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"message": message})
}
