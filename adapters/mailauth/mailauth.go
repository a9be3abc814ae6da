// Package mailauth is mail authentication over emersion/go-msgauth and
// blitiri.com.ar/go/spf: SPF, DKIM and DMARC checks of inbound mail (the
// facts; core.Authenticate decides), the Authentication-Results field, and
// DKIM keys and signatures for outgoing mail. Every DNS question goes
// through the ports.Resolver it is given.
package mailauth

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"mime"
	"net/mail"
	"strings"

	"blitiri.com.ar/go/spf"
	"github.com/emersion/go-message/textproto"
	"github.com/emersion/go-msgauth/authres"
	"github.com/emersion/go-msgauth/dkim"
	"github.com/emersion/go-msgauth/dmarc"
	"golang.org/x/net/publicsuffix"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// MaxSignatures bounds the DKIM signatures checked per message; a message
// carrying more is judged on the first ones.
const MaxSignatures = 5

// Authenticator checks inbound mail.
type Authenticator struct {
	resolver ports.Resolver
	// servID names us in Authentication-Results (RFC 8601 authserv-id).
	servID string
}

var _ ports.MailAuthenticator = (*Authenticator)(nil)

// NewAuthenticator checks through resolver; hostname is our name in the
// Authentication-Results field.
func NewAuthenticator(resolver ports.Resolver, hostname string) *Authenticator {
	return &Authenticator{resolver: resolver, servID: sanitize(hostname)}
}

// Authenticate gathers SPF, DKIM and DMARC evidence and lets core decide.
// The three checks run at once, so a message costs one round trip per
// question however many there are.
func (a *Authenticator) Authenticate(ctx context.Context, origin ports.InboundOrigin, raw []byte) core.Authentication {
	e := core.AuthEvidence{FromDomain: fromDomain(raw)}
	e.SPFDomain, e.SPFByHELO = spfDomain(origin)
	spfDone := make(chan struct{})
	go func() {
		defer close(spfDone)
		res, _ := spf.CheckHostWithSender(origin.IP, origin.HELO, origin.MailFrom,
			spf.WithContext(ctx), spf.WithResolver(a.resolver))
		e.SPF = core.AuthResult(res)
	}()
	dmarcDone := make(chan struct{})
	go func() {
		defer close(dmarcDone)
		e.DMARC = a.lookupDMARC(ctx, e.FromDomain)
	}()
	e.Signatures = a.verifyDKIM(ctx, raw)
	<-spfDone
	<-dmarcDone
	if _, ok := core.ParseAuthResult(string(e.SPF)); !ok {
		e.SPF = core.AuthPermError
	}
	return core.Authenticate(e, a.organization)
}

// spfDomain is the identity SPF checked: MAIL FROM's domain, or HELO's
// name for the null sender (RFC 7208 §2.4), which byHELO tells.
func spfDomain(o ports.InboundOrigin) (domain string, byHELO bool) {
	if _, domain, ok := core.SplitAddress(o.MailFrom); ok {
		return core.NormalizeDomain(domain), false
	}
	return core.NormalizeDomain(o.HELO), true
}

func (a *Authenticator) verifyDKIM(ctx context.Context, raw []byte) []core.DKIMOutcome {
	verifications, err := dkim.VerifyWithOptions(bytes.NewReader(raw), &dkim.VerifyOptions{
		LookupTXT:        func(name string) ([]string, error) { return a.resolver.LookupTXT(ctx, name) },
		MaxVerifications: MaxSignatures,
	})
	if err != nil && !errors.Is(err, dkim.ErrTooManySignatures) {
		return nil // the header could not be read: no signature to speak of
	}
	out := make([]core.DKIMOutcome, 0, len(verifications))
	for _, v := range verifications {
		o := core.DKIMOutcome{Domain: core.NormalizeDomain(v.Domain), Result: core.AuthPass}
		switch {
		case v.Err == nil:
		case dkim.IsTempFail(v.Err):
			o.Result = core.AuthTempError
		case dkim.IsPermFail(v.Err):
			o.Result = core.AuthPermError
		default:
			o.Result = core.AuthFail // the signature or body hash did not verify
		}
		out = append(out, o)
	}
	return out
}

// lookupDMARC finds the From domain's policy, or its organizational
// domain's (RFC 7489 §6.6.3).
func (a *Authenticator) lookupDMARC(ctx context.Context, domain string) core.DMARCLookup {
	if domain == "" {
		return core.DMARCLookup{Result: core.AuthNone}
	}
	opts := &dmarc.LookupOptions{LookupTXT: func(name string) ([]string, error) { return a.resolver.LookupTXT(ctx, name) }}
	rec, err := dmarc.LookupWithOptions(domain, opts)
	atOrg := false
	if org := a.organization(domain); errors.Is(err, dmarc.ErrNoPolicy) && org != domain {
		rec, err = dmarc.LookupWithOptions(org, opts)
		atOrg = true
	}
	switch {
	case err == nil:
		return core.DMARCLookup{Result: core.AuthPass, Policy: core.DMARCPolicy(rec.Policy), SubdomainPolicy: core.DMARCPolicy(rec.SubdomainPolicy),
			StrictSPF: rec.SPFAlignment == dmarc.AlignmentStrict, StrictDKIM: rec.DKIMAlignment == dmarc.AlignmentStrict, AtOrganization: atOrg}
	case errors.Is(err, dmarc.ErrNoPolicy):
		return core.DMARCLookup{Result: core.AuthNone}
	case dmarc.IsTempFail(err):
		return core.DMARCLookup{Result: core.AuthTempError}
	default:
		return core.DMARCLookup{Result: core.AuthPermError}
	}
}

func (a *Authenticator) organization(domain string) string {
	if org, ok := a.Organization(domain); ok {
		return org
	}
	return core.NormalizeDomain(domain)
}

// Organization is the registrable domain under the public suffix list.
func (a *Authenticator) Organization(domain string) (string, bool) {
	org, err := publicsuffix.EffectiveTLDPlusOne(core.NormalizeDomain(domain))
	return org, err == nil
}

// MaxHeaderBytes bounds how much of a message is read for its From field.
const MaxHeaderBytes = 1 << 20

// fromDomain is the domain of the message's one author: "" when the From
// field is missing, repeated, unreadable or names several mailboxes
// (RFC 7489 §6.6.1 leaves those to local policy; ours gives no pass).
func fromDomain(raw []byte) string {
	h, err := textproto.ReadHeader(bufio.NewReader(io.LimitReader(bytes.NewReader(raw), MaxHeaderBytes)))
	if err != nil {
		return ""
	}
	values := h.Values("From")
	if len(values) != 1 {
		return ""
	}
	// Only the address matters: names in any charset are read as they are.
	parser := mail.AddressParser{WordDecoder: &mime.WordDecoder{CharsetReader: func(_ string, r io.Reader) (io.Reader, error) { return r, nil }}}
	list, err := parser.ParseList(values[0])
	if err != nil || len(list) != 1 {
		return ""
	}
	_, domain, ok := core.SplitAddress(list[0].Address)
	if !ok {
		return ""
	}
	return core.NormalizeDomain(domain)
}

// ResultsField writes the Authentication-Results field, one method per
// line.
func (a *Authenticator) ResultsField(auth core.Authentication) []byte {
	if auth.Local {
		return []byte("Authentication-Results: " + a.servID + ";\r\n\tauth=pass (sent through the API by an identity of this service)\r\n")
	}
	var results []authres.Result
	switch {
	case !auth.Checked:
		// "none": nothing was checked.
	default:
		spf := &authres.SPFResult{Value: authres.ResultValue(auth.SPF)}
		if auth.SPFByHELO {
			spf.Helo = sanitize(auth.SPFDomain)
		} else {
			spf.From = sanitize(auth.SPFDomain)
		}
		results = append(results, spf)
		if len(auth.Signatures) == 0 {
			results = append(results, &authres.DKIMResult{Value: authres.ResultNone})
		}
		for _, s := range auth.Signatures {
			results = append(results, &authres.DKIMResult{Value: authres.ResultValue(s.Result), Domain: sanitize(s.Domain)})
		}
		dm := &authres.DMARCResult{Value: authres.ResultValue(auth.DMARC), From: sanitize(auth.FromDomain)}
		if auth.Policy != "" {
			dm.Reason = "p=" + string(auth.Policy)
		}
		results = append(results, dm)
	}
	field := authres.Format(a.servID, results)
	return []byte("Authentication-Results: " + strings.ReplaceAll(field, "; ", ";\r\n\t") + "\r\n")
}

// sanitize keeps a value from breaking the field: no white space, control
// characters or the field's own punctuation.
func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r <= ' ' || r == 0x7f || strings.ContainsRune(`;()"\`, r) {
			return -1
		}
		return r
	}, s)
}
