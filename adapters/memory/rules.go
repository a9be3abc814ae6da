package memory

import (
	"context"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// ruleRows are created on first use.
func (s *Store) ruleRows() map[string]*core.Rule {
	if s.rules == nil {
		s.rules = map[string]*core.Rule{}
	}
	return s.rules
}

func (s *Store) CreateRule(_ context.Context, r core.Rule) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if _, ok := s.accounts[r.AccountID]; !ok {
		return core.NotFound("Account not found.")
	}
	if r.IdentityID != "" && !s.ownsIdentity(r.AccountID, r.IdentityID) {
		return core.NotFound("Identity not found.")
	}
	s.ruleRows()[r.ID] = &r
	return nil
}

func oldestRuleFirst(a, b *core.Rule) bool {
	if !a.CreatedAt.Equal(b.CreatedAt) {
		return a.CreatedAt.Before(b.CreatedAt)
	}
	return a.ID < b.ID
}

func (s *Store) Rules(_ context.Context, scope core.Scope, page ports.Page) ([]core.Rule, int, error) {
	if err := s.lock(); err != nil {
		return nil, 0, err
	}
	defer s.mu.Unlock()
	if scope.Empty {
		return nil, 0, nil
	}
	rows := values(s.ruleRows(), func(r *core.Rule) bool {
		return r.AccountID == scope.AccountID && (scope.IdentityID == "" || r.IdentityID == "" || r.IdentityID == scope.IdentityID)
	}, oldestRuleFirst)
	rows, total := pageOf(rows, page)
	out := make([]core.Rule, len(rows))
	for i, r := range rows {
		out[i] = *r
	}
	return out, total, nil
}

func (s *Store) CountRules(_ context.Context, accountID string) (int, error) {
	if err := s.lock(); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	return len(values(s.ruleRows(), func(r *core.Rule) bool { return r.AccountID == accountID }, oldestRuleFirst)), nil
}

func (s *Store) DeleteRule(_ context.Context, accountID, id string) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if r, ok := s.ruleRows()[id]; !ok || r.AccountID != accountID {
		return core.NotFound("Rule not found.")
	}
	delete(s.rules, id)
	return nil
}

func (s *Store) RulesFor(_ context.Context, accountID, identityID string, channel core.RuleChannel, direction core.RuleDirection) ([]core.Rule, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	rows := values(s.ruleRows(), func(r *core.Rule) bool {
		return r.AccountID == accountID && r.Channel == channel && r.Direction == direction && (r.IdentityID == "" || r.IdentityID == identityID)
	}, oldestRuleFirst)
	out := make([]core.Rule, len(rows))
	for i, r := range rows {
		out[i] = *r
	}
	return out, nil
}
