package core

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestHiddenCharactersAreRefusedWhereverCallersNameSomeone(t *testing.T) {
	hidden := []rune{0x00, 0x09, 0x1b, 0x7f, 0x85, 0x9f, 0x200b, 0x200d, 0x200e, 0x200f, 0x2028, 0x202a, 0x202e, 0x2060, 0x2066, 0x2069, 0xfeff, 0x061c}
	checks := map[string]func(s string) error{
		"email":         func(s string) error { _, err := NormalizeEmail("to", "ev"+s+"il@example.org"); return err },
		"mailbox":       func(s string) error { _, _, err := NormalizeMailbox("to", "Ada"+s+" <ada@example.org>"); return err },
		"identity name": func(s string) error { return ValidateIdentityName("agent" + s) },
		"contact name": func(s string) error {
			_, err := NormalizeContact(Contact{Email: "ada@example.org", DisplayName: "Ada" + s})
			return err
		},
		"contact nickname": func(s string) error {
			_, err := NormalizeContact(Contact{PhoneNumber: "+14155550100", Nickname: s + "a"})
			return err
		},
		"rule pattern": func(s string) error { _, err := NormalizeRulePattern(RuleEmail, "@exa"+s+"mple.org"); return err },
		"sms rule":     func(s string) error { _, err := NormalizeRulePattern(RuleSMS, "+4"+s+"4"); return err },
	}
	for name, check := range checks {
		for _, r := range hidden {
			err := check(string(r))
			var e *Error
			if !errors.As(err, &e) || e.Kind != KindInvalid || !strings.Contains(fmt.Sprint(e.Fields), fmt.Sprintf("U+%04X", r)) {
				t.Errorf("%s with U+%04X: %v", name, r, err)
			}
		}
		if err := check(""); err != nil {
			t.Errorf("%s, plain: %v", name, err)
		}
	}
	// Letters of every script, accents and emoji are names like any other.
	for _, name := range []string{"Zoë", "שלום", "مرحبا", "日本語", "agent 🤖"} {
		if err := ValidateIdentityName(name); err != nil {
			t.Errorf("%q: %v", name, err)
		}
	}
	if _, _, err := NormalizeMailbox("to", "=?utf-8?q?Ada=E2=80=AE?= <ada@example.org>"); KindOf(err) != KindInvalid {
		t.Errorf("an encoded word that decodes to an override: %v", err)
	}
}
