package core

import (
	"fmt"
	"strings"
	"time"
)

// RuleChannel, RuleDirection and RuleAction are the choices of a rule.
type (
	RuleChannel   string
	RuleDirection string
	RuleAction    string
)

const (
	RuleEmail    RuleChannel   = "email"
	RuleSMS      RuleChannel   = "sms"
	RuleCall     RuleChannel   = "call" // phone calls, judged by number as texts are
	RuleInbound  RuleDirection = "inbound"
	RuleOutbound RuleDirection = "outbound"
	RuleAllow    RuleAction    = "allow"
	RuleBlock    RuleAction    = "block"
)

// MaxRules bounds the rules of one account (its identities' and its own),
// so that the rules a message is judged by stay few.
const MaxRules = 1000

// Rule allows or blocks the correspondents of an identity (or, with no
// IdentityID, of every identity of the account) on one channel and
// direction. Pattern is, for email, an address or "@domain" (the domain and
// its subdomains); for SMS, an E.164 number or a prefix of one ("+44").
type Rule struct {
	ID         string
	AccountID  string
	IdentityID string // "" for the whole account
	Channel    RuleChannel
	Direction  RuleDirection
	Action     RuleAction
	Pattern    string
	CreatedAt  time.Time
}

// NormalizeRulePattern checks a pattern for channel and returns it in the
// form rules compare (addresses and domains lower-cased).
func NormalizeRulePattern(channel RuleChannel, pattern string) (string, error) {
	pattern = strings.TrimSpace(pattern)
	if err := CheckVisible("pattern", pattern); err != nil {
		return "", err
	}
	switch channel {
	case RuleEmail:
		if domain, ok := strings.CutPrefix(pattern, "@"); ok {
			d, err := NormalizeDomainName("pattern", domain)
			if err != nil {
				return "", Invalid("pattern", "Enter an address, or @ and a domain such as @example.com.")
			}
			return "@" + d, nil
		}
		addr, err := NormalizeEmail("pattern", pattern)
		if err != nil {
			return "", Invalid("pattern", "Enter an address, or @ and a domain such as @example.com.")
		}
		return strings.ToLower(addr), nil
	case RuleSMS, RuleCall:
		if len(pattern) < 2 || len(pattern) > 16 || pattern[0] != '+' || pattern[1] == '0' {
			return "", Invalid("pattern", "Enter an E.164 number such as +14155550100, or a prefix of one such as +44.")
		}
		for _, c := range pattern[1:] {
			if c < '0' || c > '9' {
				return "", Invalid("pattern", "Enter an E.164 number such as +14155550100, or a prefix of one such as +44.")
			}
		}
		return pattern, nil
	}
	return "", Invalid("channel", "%q is not a valid choice; use email, sms or call.", channel)
}

// Matches reports whether the rule's pattern covers party: an email
// address (ignoring case) or a phone number.
func (r Rule) Matches(party string) bool {
	if r.Channel == RuleSMS || r.Channel == RuleCall {
		return strings.HasPrefix(party, r.Pattern)
	}
	party = strings.ToLower(party)
	if domain, ok := strings.CutPrefix(r.Pattern, "@"); ok {
		_, d, ok := SplitAddress(party)
		return ok && (d == domain || strings.HasSuffix(d, "."+domain))
	}
	return party == r.Pattern
}

// Refusal is why rules refuse a correspondent: the block rule that
// matched, or, when none did, that allow rules exist and none matched.
type Refusal struct {
	Rule *Rule // the matching block rule; nil when refused for matching no allow rule
}

// Reason says the refusal in words, naming the rule.
func (f Refusal) Reason(party string) string {
	if f.Rule != nil {
		return fmt.Sprintf("%s is blocked by rule %s (%s %s).", party, f.Rule.ID, f.Rule.Action, f.Rule.Pattern)
	}
	return fmt.Sprintf("%s matches none of the allow rules.", party)
}

// JudgeCorrespondent applies rules (those of one identity and its account,
// for one channel and direction) to party: a matching block rule refuses;
// otherwise, when any allow rule exists, party passes only if one matches.
// It returns nil when party passes.
func JudgeCorrespondent(rules []Rule, party string) *Refusal {
	allows, allowed := false, false
	for i, r := range rules {
		switch {
		case r.Action == RuleBlock && r.Matches(party):
			return &Refusal{Rule: &rules[i]}
		case r.Action == RuleAllow:
			allows = true
			allowed = allowed || r.Matches(party)
		}
	}
	if allows && !allowed {
		return &Refusal{}
	}
	return nil
}
