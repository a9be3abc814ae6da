package core

import (
	"fmt"
	"testing"
)

func TestJudgeSpam(t *testing.T) {
	cases := []struct {
		action    SpamAction
		refusable bool
		want      SpamOutcome
	}{
		{SpamNoAction, true, SpamAccept},
		{SpamGreylist, true, SpamAccept},
		{SpamAddHeader, true, SpamFile},
		{SpamRewriteSubject, false, SpamFile},
		{SpamSoftReject, true, SpamDefer},
		{SpamSoftReject, false, SpamAccept},
		{SpamReject, true, SpamRefuse},
		{SpamReject, false, SpamFile},        // accepted elsewhere: kept, as spam
		{"unknown action", true, SpamAccept}, // a newer rspamd's word is not a reason to lose mail
	}
	for _, c := range cases {
		if got := JudgeSpam(c.action, c.refusable); got != c.want {
			t.Errorf("JudgeSpam(%q, %v) = %v, want %v", c.action, c.refusable, got, c.want)
		}
	}
}

func TestSpamVerdictBounded(t *testing.T) {
	var v SpamVerdict
	for i := range MaxSpamSymbols + 10 {
		v.Symbols = append(v.Symbols, SpamSymbol{Name: fmt.Sprintf("S%03d", i), Score: float64(i % 7)})
	}
	b := v.Bounded()
	if len(b.Symbols) != MaxSpamSymbols || b.Symbols[0].Score != 6 || b.Symbols[0].Name != "S006" {
		t.Fatalf("bounded: %d symbols, first %+v", len(b.Symbols), b.Symbols[0])
	}
	if len(v.Symbols) != MaxSpamSymbols+10 || v.Symbols[0].Name != "S000" {
		t.Fatal("Bounded changed its receiver's symbols")
	}
}
