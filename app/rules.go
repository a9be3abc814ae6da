package app

import (
	"context"
	"errors"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// Rules keeps allow and block rules and applies them: to the recipients of
// mail and texts sent, to the envelope sender of mail received (at RCPT),
// to the From of mail received with an empty envelope sender, and to the
// sender of texts received. The decision is core.JudgeCorrespondent.
type Rules struct {
	base
	store      ports.RuleStore
	identities *Identities
}

// RuleInput is what a caller writes to create a rule.
type RuleInput struct {
	Identity  string // "" for the account
	Channel   string
	Direction string
	Action    string
	Pattern   string
}

// ErrSenderRefused is the refusal of an inbound mail rule at RCPT, which
// the SMTP listener answers 550 5.7.1.
var ErrSenderRefused = errors.New("the recipient's rules refuse this sender")

// Create stores a rule. Rules limit what an identity may do and who may
// reach it, so they are a management key's: an agent must not lift the
// limits put on it.
func (s *Rules) Create(ctx context.Context, p core.Principal, in RuleInput) (core.Rule, error) {
	if err := requireManagement(p); err != nil {
		return core.Rule{}, err
	}
	var problems core.Problems
	r := core.Rule{ID: s.ids.NewUUID(), AccountID: p.AccountID, IdentityID: in.Identity, Channel: core.RuleChannel(in.Channel),
		Direction: core.RuleDirection(in.Direction), Action: core.RuleAction(in.Action), CreatedAt: s.now()}
	switch r.Channel {
	case core.RuleEmail, core.RuleSMS, core.RuleCall:
		pattern, err := core.NormalizeRulePattern(r.Channel, in.Pattern)
		if err == nil && r.Channel != core.RuleEmail && s.plan != nil && !s.plan.PossiblePrefix(pattern) {
			err = core.Invalid("pattern", "%s starts no possible phone number: no country code of the numbering plans starts so, or it is longer than a number.", pattern)
		}
		if !problems.Merge(err) {
			r.Pattern = pattern
		}
	default:
		problems.Add("channel", "%q is not a valid choice; use email, sms or call.", in.Channel)
	}
	if r.Direction != core.RuleInbound && r.Direction != core.RuleOutbound {
		problems.Add("direction", "%q is not a valid choice; use inbound or outbound.", in.Direction)
	}
	if r.Action != core.RuleAllow && r.Action != core.RuleBlock {
		problems.Add("action", "%q is not a valid choice; use allow or block.", in.Action)
	}
	if err := problems.Err(); err != nil {
		return core.Rule{}, err
	}
	if r.IdentityID != "" {
		if _, err := s.identities.lookup(ctx, p.AccountID, r.IdentityID); isNotFound(err) {
			return core.Rule{}, core.Invalid("identity", "Unknown identity %q.", r.IdentityID)
		} else if err != nil {
			return core.Rule{}, err
		}
	}
	n, err := s.store.CountRules(ctx, p.AccountID)
	if err != nil {
		return core.Rule{}, err
	}
	if n >= core.MaxRules {
		return core.Rule{}, core.Invalid(core.NonFieldErrors, "An account may have at most %d rules.", core.MaxRules)
	}
	return r, s.store.CreateRule(ctx, r)
}

// List lists the rules in scope: an identity key sees its identity's rules
// and the account's.
func (s *Rules) List(ctx context.Context, p core.Principal, requested string, page ports.Page) ([]core.Rule, int, error) {
	return s.store.Rules(ctx, p.Scope(requested), page)
}

// Delete removes a rule (a management key's, as Create).
func (s *Rules) Delete(ctx context.Context, p core.Principal, id string) error {
	if err := requireManagement(p); err != nil {
		return err
	}
	return s.store.DeleteRule(ctx, p.AccountID, id)
}

// refusal is why the rules of an identity refuse party on a channel and
// direction, or nil when they let it pass.
func (s *Rules) refusal(ctx context.Context, accountID, identityID string, channel core.RuleChannel, direction core.RuleDirection, party string) (*core.Refusal, error) {
	rules, err := s.store.RulesFor(ctx, accountID, identityID, channel, direction)
	if err != nil || len(rules) == 0 {
		return nil, err
	}
	return core.JudgeCorrespondent(rules, party), nil
}

// checkRecipients refuses, as a validation error on the field that named
// it, a recipient the identity's outbound rules refuse.
func (s *Rules) checkRecipients(ctx context.Context, accountID, identityID string, channel core.RuleChannel, fields map[string][]string) error {
	rules, err := s.store.RulesFor(ctx, accountID, identityID, channel, core.RuleOutbound)
	if err != nil || len(rules) == 0 {
		return err
	}
	var problems core.Problems
	for _, field := range []string{"to_email", "to", "cc", "bcc"} {
		for _, party := range fields[field] {
			if f := core.JudgeCorrespondent(rules, party); f != nil {
				problems.Add(field, "%s", f.Reason(party))
			}
		}
	}
	return problems.Err()
}

// blocked reports whether an identity's inbound rules refuse party.
func (s *Rules) blocked(ctx context.Context, accountID, identityID string, channel core.RuleChannel, party string) (bool, error) {
	f, err := s.refusal(ctx, accountID, identityID, channel, core.RuleInbound, party)
	return f != nil, err
}
