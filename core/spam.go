package core

import (
	"sort"
)

// SpamAction is what a spam filter (rspamd) advises for a message.
type SpamAction string

// rspamd's actions, mildest first.
const (
	SpamNoAction       SpamAction = "no action"
	SpamGreylist       SpamAction = "greylist"
	SpamAddHeader      SpamAction = "add header"
	SpamRewriteSubject SpamAction = "rewrite subject"
	SpamSoftReject     SpamAction = "soft reject"
	SpamReject         SpamAction = "reject"
)

// SpamSymbol is one rule of the filter that matched, with what it added
// to the score.
type SpamSymbol struct {
	Name  string
	Score float64
}

// MaxSpamSymbols bounds the symbols a stored verdict keeps (the highest
// scores), whatever the filter answers.
const MaxSpamSymbols = 50

// SpamVerdict is the filter's answer for one message.
type SpamVerdict struct {
	Score   float64
	Action  SpamAction
	Symbols []SpamSymbol
}

// Bounded is v with at most MaxSpamSymbols symbols, the highest scores
// first (then by name), so that a stored verdict reads the same every
// time.
func (v SpamVerdict) Bounded() SpamVerdict {
	syms := append([]SpamSymbol(nil), v.Symbols...)
	sort.Slice(syms, func(i, j int) bool {
		if syms[i].Score != syms[j].Score {
			return syms[i].Score > syms[j].Score
		}
		return syms[i].Name < syms[j].Name
	})
	if len(syms) > MaxSpamSymbols {
		syms = syms[:MaxSpamSymbols]
	}
	v.Symbols = syms
	return v
}

// SpamOutcome is what becomes of a message the filter judged.
type SpamOutcome int

const (
	SpamAccept SpamOutcome = iota // stored as mail (is_spam false)
	SpamFile                      // stored as spam: hidden, announced as email.spam
	SpamRefuse                    // refused for good (SMTP 550 5.7.1), nothing stored
	SpamDefer                     // refused for now (SMTP 451), the sender retries
)

// JudgeSpam decides what becomes of a message from the filter's action.
// refusable says that the sender is still waiting for our answer (SMTP at
// the end of DATA). Mail another server accepted already (a provider's
// webhook, an IMAP source) cannot be refused: refusing it would lose it,
// since nobody would be told, so reject files it as spam, and soft reject
// (a passing state: rate limits, greylisting) lets it in. greylist is
// rspamd's advice to defer the first attempt; Callsign does not greylist,
// so it passes.
func JudgeSpam(action SpamAction, refusable bool) SpamOutcome {
	switch action {
	case SpamAddHeader, SpamRewriteSubject:
		return SpamFile
	case SpamReject:
		if refusable {
			return SpamRefuse
		}
		return SpamFile
	case SpamSoftReject:
		if refusable {
			return SpamDefer
		}
	}
	return SpamAccept
}
