package core

import "testing"

func TestRulePatterns(t *testing.T) {
	for _, c := range []struct {
		channel RuleChannel
		in, out string
	}{
		{RuleEmail, "Ann@Customer.Example", "ann@customer.example"},
		{RuleEmail, "@Customer.Example.", "@customer.example"},
		{RuleSMS, "+44", "+44"},
		{RuleSMS, "+14155550100", "+14155550100"},
	} {
		if got, err := NormalizeRulePattern(c.channel, c.in); err != nil || got != c.out {
			t.Errorf("%s %q: %q %v", c.channel, c.in, got, err)
		}
	}
	for _, c := range []struct {
		channel RuleChannel
		in      string
	}{
		{RuleEmail, "@"}, {RuleEmail, "@localhost"}, {RuleEmail, "customer.example"}, {RuleEmail, "a@b@c"}, {RuleEmail, ""},
		{RuleSMS, "+"}, {RuleSMS, "44"}, {RuleSMS, "+0"}, {RuleSMS, "+4415555501001234"}, {RuleSMS, "+44 20"}, {RuleSMS, "a@b.example"},
		{"fax", "+44"},
	} {
		if got, err := NormalizeRulePattern(c.channel, c.in); err == nil {
			t.Errorf("%s %q: accepted as %q", c.channel, c.in, got)
		}
	}
}

func TestJudgeCorrespondent(t *testing.T) {
	allowDomain := Rule{ID: "a", Channel: RuleEmail, Action: RuleAllow, Pattern: "@customer.example"}
	blockOne := Rule{ID: "b", Channel: RuleEmail, Action: RuleBlock, Pattern: "mallory@customer.example"}
	blockNumber := Rule{ID: "c", Channel: RuleSMS, Action: RuleBlock, Pattern: "+44"}
	for _, c := range []struct {
		rules   []Rule
		party   string
		refused bool
		by      string
	}{
		{nil, "anyone@example.org", false, ""},
		{[]Rule{allowDomain}, "ann@customer.example", false, ""},
		{[]Rule{allowDomain}, "Ann@EU.Customer.Example", false, ""},
		{[]Rule{allowDomain}, "ann@notcustomer.example", true, ""},
		{[]Rule{allowDomain}, "ann@customer.example.evil", true, ""},
		{[]Rule{allowDomain, blockOne}, "mallory@customer.example", true, "b"},
		{[]Rule{blockOne}, "ann@customer.example", false, ""},
		{[]Rule{blockNumber}, "+442071838750", true, "c"},
		{[]Rule{blockNumber}, "+14155550100", false, ""},
	} {
		f := JudgeCorrespondent(c.rules, c.party)
		if (f != nil) != c.refused || f != nil && c.by != "" && (f.Rule == nil || f.Rule.ID != c.by) {
			t.Errorf("%v %q: %+v", c.rules, c.party, f)
		}
	}
}
