package app

import (
	"context"
	"errors"
	"sync"
	"time"

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
	// judging caches the rules refusal reads: the SMTP listener asks at
	// every RCPT.
	judging ruleCache
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
	defer s.judging.forget(p.AccountID)
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
	defer s.judging.forget(p.AccountID)
	return s.store.DeleteRule(ctx, p.AccountID, id)
}

// refusal is why the rules of an identity refuse party on a channel and
// direction, or nil when they let it pass.
func (s *Rules) refusal(ctx context.Context, accountID, identityID string, channel core.RuleChannel, direction core.RuleDirection, party string) (*core.Refusal, error) {
	key := ruleKey{accountID, identityID, channel, direction}
	now := s.now()
	rules, ok := s.judging.get(key, now)
	if !ok {
		var err error
		if rules, err = s.store.RulesFor(ctx, accountID, identityID, channel, direction); err != nil {
			return nil, err
		}
		s.judging.put(key, rules, now)
	}
	if len(rules) == 0 {
		return nil, nil
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

// ruleCache remembers the rules that judge an identity's correspondents
// for ruleCacheTTL. Rules change through Create and Delete, which drop
// the account's entries here at once; a change made on another instance
// is seen here within ruleCacheTTL, a time-to-live rather than the event
// feed because rule changes are no events. A rule judges mail and texts
// still to come, so it taking effect a second later is as if it had been
// made a second later, and one query per identity a second replaces one
// per RCPT.
type ruleCache struct {
	mu      sync.Mutex
	entries map[ruleKey]cachedRules
}

type ruleKey struct {
	accountID, identityID string
	channel               core.RuleChannel
	direction             core.RuleDirection
}

type cachedRules struct {
	rules []core.Rule
	at    time.Time
}

const (
	ruleCacheMax = 50_000
	ruleCacheTTL = time.Second
)

func (c *ruleCache) get(k ruleKey, now time.Time) ([]core.Rule, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[k]
	return e.rules, ok && now.Sub(e.at) < ruleCacheTTL && !now.Before(e.at)
}

func (c *ruleCache) put(k ruleKey, rules []core.Rule, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil || len(c.entries) >= ruleCacheMax {
		c.entries = map[ruleKey]cachedRules{}
	}
	c.entries[k] = cachedRules{rules, now}
}

// forget drops an account's entries, after its rules changed.
func (c *ruleCache) forget(accountID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.entries {
		if k.accountID == accountID {
			delete(c.entries, k)
		}
	}
}
