package core

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
)

// MTA-STS (RFC 8461) tells sending servers to deliver a custom domain's
// mail only over TLS to our MX host, and TLS reporting (RFC 8460) where
// they report failures. Both are published by the domain's owner; we serve
// the policy at https://mta-sts.<domain>/.well-known/mta-sts.txt.

// MTASTSMode is a policy's mode: "testing" (senders report, and deliver
// anyway) or "enforce" (senders deliver only over valid TLS).
type MTASTSMode string

const (
	MTASTSTesting MTASTSMode = "testing"
	MTASTSEnforce MTASTSMode = "enforce"
)

// ParseMTASTSMode reads a mode a person chose.
func ParseMTASTSMode(field, s string) (MTASTSMode, error) {
	switch m := MTASTSMode(s); m {
	case MTASTSTesting, MTASTSEnforce:
		return m, nil
	}
	return "", Invalid(field, "Choose testing or enforce.")
}

// MTASTSMaxAge is how long senders keep a policy: one week, as RFC 8461
// suggests for a policy that is not changing often.
const MTASTSMaxAge = 7 * 24 * time.Hour

const (
	PurposeMTASTS RecordPurpose = "mta_sts"
	PurposeTLSRPT RecordPurpose = "tls_rpt"
)

// MTASTSPolicyHost is the name the policy is fetched from.
func MTASTSPolicyHost(domain string) string { return "mta-sts." + domain }

// MTASTSPolicyPath is where the policy is served on that host.
const MTASTSPolicyPath = "/.well-known/mta-sts.txt"

// MTASTSRecordName is the TXT record announcing the policy and its id.
func MTASTSRecordName(domain string) string { return "_mta-sts." + domain }

// TLSRPTRecordName is the TXT record saying where TLS reports go.
func TLSRPTRecordName(domain string) string { return "_smtp._tls." + domain }

// STSMode is the domain's MTA-STS mode: testing until its owner chose.
func (d Domain) STSMode() MTASTSMode {
	if d.MTASTSMode == "" {
		return MTASTSTesting
	}
	return d.MTASTSMode
}

// MTASTSPolicy is the domain's policy text, CRLF-separated as RFC 8461
// §3.2 has it; ok is false when there is none to serve: without an MX host
// of our own no "mx" line can be written.
func (d Domain) MTASTSPolicy(s DomainSettings) (policy string, ok bool) {
	if s.MXHost == "" {
		return "", false
	}
	return fmt.Sprintf("version: STSv1\r\nmode: %s\r\nmx: %s\r\nmax_age: %d\r\n",
		d.STSMode(), NormalizeDomain(s.MXHost), int(MTASTSMaxAge/time.Second)), true
}

// MTASTSPolicyID names a policy's content (RFC 8461 §3.1: 1-32 letters or
// digits): it changes exactly when the policy does, which is what tells
// senders to fetch it again.
func MTASTSPolicyID(policy string) string {
	sum := sha256.Sum256([]byte(policy))
	return hex.EncodeToString(sum[:10])
}

// MTASTSRecordValue is the _mta-sts TXT record for a policy.
func MTASTSRecordValue(policy string) string { return "v=STSv1; id=" + MTASTSPolicyID(policy) }

// TLSRPTRecordValue is the _smtp._tls TXT record sending reports to addr.
func TLSRPTRecordValue(addr string) string { return "v=TLSRPTv1; rua=mailto:" + addr }

// MTASTSStatus: ok when the domain has exactly one STSv1 record (RFC 8461
// §3.1: more than one is no policy at all) and it names the current id.
func MTASTSStatus(txts []string, id string) RecordStatus {
	var found []map[string]string
	for _, t := range txts {
		if tags := TagList(t); tags["v"] == "STSv1" {
			found = append(found, tags)
		}
	}
	switch {
	case len(found) == 0:
		return RecordMissing
	case len(found) == 1 && found[0]["id"] == id:
		return RecordOK
	}
	return RecordMismatch
}

// TLSRPTStatus: ok when the domain has exactly one TLSRPTv1 record (RFC
// 8460 §3) whose rua lists mailto:addr.
func TLSRPTStatus(txts []string, addr string) RecordStatus {
	var found []map[string]string
	for _, t := range txts {
		if tags := TagList(t); tags["v"] == "TLSRPTv1" {
			found = append(found, tags)
		}
	}
	if len(found) == 0 {
		return RecordMissing
	}
	if len(found) == 1 {
		for _, uri := range strings.Split(found[0]["rua"], ",") {
			if strings.EqualFold(strings.TrimSpace(uri), "mailto:"+addr) {
				return RecordOK
			}
		}
	}
	return RecordMismatch
}
