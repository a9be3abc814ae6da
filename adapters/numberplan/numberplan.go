// Package numberplan implements ports.NumberPlan with nyaruka/phonenumbers,
// a Go port of Google's libphonenumber and its metadata of every country's
// numbering plan.
package numberplan

import (
	"strconv"
	"sync"

	"github.com/nyaruka/phonenumbers"
)

// Plan implements ports.NumberPlan.
type Plan struct{}

// PossibleNumber implements ports.NumberPlan. It asks IsPossibleNumber, the
// lengths of the country's plan, and not IsValidNumber, the assigned
// ranges: that refuses the fictional ranges the simulator hands out
// (+44 7700 900xxx) and ranges newer than the library's metadata.
func (Plan) PossibleNumber(e164 string) bool {
	n, err := phonenumbers.Parse(e164, "")
	return err == nil && phonenumbers.IsPossibleNumber(n)
}

// PossiblePrefix implements ports.NumberPlan.
func (p Plan) PossiblePrefix(prefix string) bool {
	digits := prefix[min(1, len(prefix)):]
	for n := 1; n <= 3 && n <= len(digits); n++ {
		cc, err := strconv.Atoi(digits[:n])
		if err != nil || !assigned(cc) {
			continue
		}
		// A prefix as long as a whole number must be one.
		if len(digits) >= maxNumberDigits {
			return p.PossibleNumber(prefix)
		}
		return true
	}
	// Shorter than any country code it could start ("+4" of +44).
	for cc := range callingCodes() {
		if s := strconv.Itoa(cc); len(digits) < len(s) && s[:len(digits)] == digits {
			return true
		}
	}
	return false
}

// maxNumberDigits is E.164's longest number, country code included.
const maxNumberDigits = 15

// callingCodes are the assigned country calling codes, built once.
var callingCodes = sync.OnceValue(phonenumbers.GetSupportedCallingCodes)

func assigned(cc int) bool { return callingCodes()[cc] }
