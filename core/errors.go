// Package core holds Callsign's domain: the types every other package speaks
// in, the pure rules over them, and the kinds of error a use case can end in.
// It imports the standard library only.
package core

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Kind classifies an error by what the caller can do about it. The HTTP
// adapter maps each kind to one status; the SMTP and IMAP adapters map them
// to their own replies.
type Kind int

const (
	KindInternal        Kind = iota // a fault of ours; the caller may retry later
	KindInvalid                     // the request is malformed; Fields names what
	KindUnauthorized                // no valid credentials
	KindPaymentRequired             // the account's subscription is not active
	KindForbidden                   // valid credentials without the right
	KindNotFound                    // no such thing, or not visible to the caller
	KindConflict                    // clashes with existing state
	KindTooLarge                    // over a size limit
	KindRateLimited                 // too many requests
	KindUnavailable                 // a dependency is down; try again later
	KindUnprocessable               // well-formed, but contradicts what the request claims (an idempotency key reused); Fields names what
	KindGone                        // existed once and is gone for good (an expired cursor)
)

// Error is the error every use case returns for an expected failure.
type Error struct {
	Kind    Kind
	Message string
	// Fields maps a request field to what is wrong with it (validation only).
	Fields map[string][]string
	// RetryAfterSeconds is set on KindRateLimited.
	RetryAfterSeconds int
	// Quota names the quota reached, for adapters that answer it in a
	// protocol of their own (SMTP's 452 4.2.2).
	Quota Quota
}

// NonFieldErrors is the Fields key for problems that belong to no one field.
const NonFieldErrors = "non_field_errors"

func (e *Error) Error() string {
	if len(e.Fields) == 0 {
		return e.Message
	}
	names := make([]string, 0, len(e.Fields))
	for name := range e.Fields {
		names = append(names, name)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, name := range names {
		parts = append(parts, name+": "+strings.Join(e.Fields[name], " "))
	}
	return strings.Join(parts, "; ")
}

// KindOf reports the kind of err: KindInternal for anything that is not an *Error.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return KindInternal
}

// Invalid is a validation error on one field.
func Invalid(field, format string, args ...any) *Error {
	msg := fmt.Sprintf(format, args...)
	return &Error{Kind: KindInvalid, Message: msg, Fields: map[string][]string{field: {msg}}}
}

// NotFound says the thing does not exist or is not the caller's to see.
func NotFound(format string, args ...any) *Error {
	return &Error{Kind: KindNotFound, Message: fmt.Sprintf(format, args...)}
}

// Conflict says the request clashes with existing state.
func Conflict(format string, args ...any) *Error {
	return &Error{Kind: KindConflict, Message: fmt.Sprintf(format, args...)}
}

// Forbidden says the credentials are valid but lack the right.
func Forbidden(format string, args ...any) *Error {
	return &Error{Kind: KindForbidden, Message: fmt.Sprintf(format, args...)}
}

// Unauthorized says the credentials are missing or wrong.
func Unauthorized(format string, args ...any) *Error {
	return &Error{Kind: KindUnauthorized, Message: fmt.Sprintf(format, args...)}
}

// Unavailable says a dependency failed in a way worth retrying.
func Unavailable(format string, args ...any) *Error {
	return &Error{Kind: KindUnavailable, Message: fmt.Sprintf(format, args...)}
}

// Gone says what was asked for existed and is gone for good.
func Gone(format string, args ...any) *Error {
	return &Error{Kind: KindGone, Message: fmt.Sprintf(format, args...)}
}

// TooLarge says a body or value is over its limit.
func TooLarge(format string, args ...any) *Error {
	return &Error{Kind: KindTooLarge, Message: fmt.Sprintf(format, args...)}
}

// PaymentRequired says the account's subscription does not allow the request.
func PaymentRequired(format string, args ...any) *Error {
	return &Error{Kind: KindPaymentRequired, Message: fmt.Sprintf(format, args...)}
}

// Problems collects validation errors across several fields, so a request
// with three bad fields hears about all three at once.
type Problems struct {
	fields map[string][]string
}

// Add records a problem with field.
func (p *Problems) Add(field, format string, args ...any) {
	if p.fields == nil {
		p.fields = map[string][]string{}
	}
	p.fields[field] = append(p.fields[field], fmt.Sprintf(format, args...))
}

// Merge adds the fields of err when it is a validation error, and reports
// whether it was one.
func (p *Problems) Merge(err error) bool {
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindInvalid {
		return false
	}
	for field, msgs := range e.Fields {
		for _, m := range msgs {
			p.Add(field, "%s", m)
		}
	}
	return true
}

// Has reports whether field already has a problem.
func (p *Problems) Has(field string) bool { return len(p.fields[field]) > 0 }

// Err is nil when nothing was added, else a KindInvalid *Error.
func (p *Problems) Err() error {
	if len(p.fields) == 0 {
		return nil
	}
	e := &Error{Kind: KindInvalid, Fields: p.fields}
	e.Message = e.Error()
	return e
}
