package memory

import (
	"bytes"
	"context"
	"errors"
	"sync"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// SpamActionField names the field a test message carries to choose the
// fake filter's action.
const SpamActionField = "X-Test-Spam-Action: "

// SpamFilter is a fake spam filter (ports.SpamChecker): it answers the
// action a message names in its X-Test-Spam-Action field ("no action"
// without one; score 10 for any other), fails while Down, and records
// what it was asked and taught.
type SpamFilter struct {
	mu      sync.Mutex
	down    bool
	queries []ports.SpamQuery
	lessons []bool // true: learned as spam
}

var _ ports.SpamChecker = (*SpamFilter)(nil)

// errFilterDown is the fake's failure while Down.
var errFilterDown = errors.New("spam filter down")

// SetDown makes every call fail (true) or answer again.
func (f *SpamFilter) SetDown(down bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down = down
}

func (f *SpamFilter) Check(_ context.Context, q ports.SpamQuery, raw []byte) (core.SpamVerdict, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return core.SpamVerdict{}, errFilterDown
	}
	f.queries = append(f.queries, q)
	v := core.SpamVerdict{Score: 0.5, Action: core.SpamNoAction}
	if i := bytes.Index(raw, []byte(SpamActionField)); i >= 0 {
		line, _, _ := bytes.Cut(raw[i+len(SpamActionField):], []byte("\r\n"))
		v = core.SpamVerdict{Score: 10, Action: core.SpamAction(line), Symbols: []core.SpamSymbol{{Name: "TEST_SPAM", Score: 10}}}
	}
	return v, nil
}

func (f *SpamFilter) Learn(_ context.Context, spam bool, _ []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return errFilterDown
	}
	f.lessons = append(f.lessons, spam)
	return nil
}

// Queries are what the filter was asked, oldest first.
func (f *SpamFilter) Queries() []ports.SpamQuery {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]ports.SpamQuery(nil), f.queries...)
}

// Lessons are what it was taught, oldest first (true: spam).
func (f *SpamFilter) Lessons() []bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]bool(nil), f.lessons...)
}
