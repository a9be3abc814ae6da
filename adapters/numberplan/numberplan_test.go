package numberplan_test

import (
	"testing"

	"github.com/callsign/callsign/adapters/numberplan"
	"github.com/callsign/callsign/ports"
)

var _ ports.NumberPlan = numberplan.Plan{}

func TestPossibleNumber(t *testing.T) {
	for number, want := range map[string]bool{
		"+14155550100":      true,
		"+447700900130":     true, // the simulator's fictional range: possible, not assigned
		"+4915112345678":    true,
		"+5511955550123":    true,
		"+1415":             false, // too short for the North American plan
		"+4477009001301234": false,
		"+999123456789":     false, // no such country code
		"+":                 false,
		"":                  false,
	} {
		if got := (numberplan.Plan{}).PossibleNumber(number); got != want {
			t.Errorf("PossibleNumber(%q) = %v, want %v", number, got, want)
		}
	}
}

func TestPossiblePrefix(t *testing.T) {
	for prefix, want := range map[string]bool{
		"+4":               true, // starts +44, +49 …
		"+44":              true,
		"+1415":            true,
		"+447700":          true,
		"+14155550100":     true,
		"+999":             false, // no such country code
		"+99":              true,  // +992 Tajikistan, +998 Uzbekistan
		"+141555501001234": false, // as long as a number, and no possible one
	} {
		if got := (numberplan.Plan{}).PossiblePrefix(prefix); got != want {
			t.Errorf("PossiblePrefix(%q) = %v, want %v", prefix, got, want)
		}
	}
}
