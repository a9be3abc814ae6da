package sqlstore

import (
	"iter"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/callsign/callsign/core"
	"github.com/kljensen/snowball/english"
)

// englishDocument is a message's search document on PostgreSQL in tsvector
// text form: what setweight(to_tsvector('english', subject), 'A') ||
// setweight(to_tsvector('english', body), 'B') makes of the same text, but
// of the words core.SearchWords reads, and made here rather than by the
// database, whose parser and dictionaries took 30% of its time per message.
//
// The words are what a query's words are (runs of letters and digits,
// folded), read as to_tsquery('english', word) reads each: PostgreSQL's
// parser splits a word that starts with a number in scientific notation
// ("1e5items"); a token with a digit is kept as it is (the simple
// dictionary); a stop word of the english dictionary is dropped but keeps
// its position; any other token is stemmed by the Snowball English stemmer,
// as english_stem does. The two agree on every word of Go's own sources
// (TestEnglishDocumentIsPostgresOwn). Where PostgreSQL's parser reads a
// host, an address or a hyphenated word as one more token, this document
// holds only its words, which are all a query can ask for.
func englishDocument(subject, body string) string {
	d := tsBuilders.Get().(*tsBuilder)
	defer d.release()
	// || moves the right side's positions past the left side's largest.
	shift := d.add(core.EachSearchWord(subject), 'A', 0)
	d.add(core.EachSearchWord(body), 'B', shift)
	return d.text()
}

// The bounds of a tsvector's positions (PostgreSQL's MAXENTRYPOS - 1 and
// MAXNUMPOS): a later word takes the last position, and a lexeme keeps at
// most 256, of which each to_tsvector gives it 255. A position repeated at
// the last one is left for the tsvector's input to drop.
const (
	tsMaxPosition  = 1<<14 - 1
	tsMaxPositions = 256
)

// tsBuilder gathers a document's lexemes and their positions. Builders are
// reused: a message's text repeats its words, and its tables would grow
// again for each.
type tsBuilder struct {
	lexemeOf map[string]int32 // a word's lexeme, -1 for a stop word
	numberOf map[string]int32 // a lexeme's place in lexemes
	lexemes  []string
	kept     []int32 // positions each lexeme has in the part being added
	hits     []tsHit // every position kept, in order
}

type tsHit struct {
	lexeme int32
	pos    uint16
	weight byte
}

var tsBuilders = sync.Pool{New: func() any {
	return &tsBuilder{lexemeOf: make(map[string]int32), numberOf: make(map[string]int32)}
}}

// release returns d to the pool, unless a long text grew it past what a
// message usually needs: clearing a table costs as much as it has room for.
func (d *tsBuilder) release() {
	if len(d.lexemeOf) > 4096 {
		return
	}
	// Cleared, not only cut: a lexeme may be a piece of the text.
	clear(d.lexemeOf)
	clear(d.numberOf)
	clear(d.lexemes)
	d.lexemes, d.kept, d.hits = d.lexemes[:0], d.kept[:0], d.hits[:0]
	tsBuilders.Put(d)
}

// add is to_tsvector('english', …) of words with weight, positions moved
// by shift; it returns the largest position it kept (shift for none).
func (d *tsBuilder) add(words iter.Seq[string], weight byte, shift uint16) uint16 {
	clear(d.kept)
	pos, largest := 0, shift
	token := func(t string) {
		pos++ // stop words too
		n, seen := d.lexemeOf[t]
		if !seen {
			n = d.number(t) // t, a piece of the text, is let go at release
			d.lexemeOf[t] = n
		}
		if n < 0 || d.kept[n] == tsMaxPositions-1 {
			return
		}
		d.kept[n]++
		p := min(uint16(min(pos, tsMaxPosition))+shift, tsMaxPosition)
		d.hits = append(d.hits, tsHit{n, p, weight})
		largest = max(largest, p)
	}
	for w := range words {
		if number, rest := splitScientific(w); rest != "" {
			token(number)
			w = rest
		}
		token(w)
	}
	return largest
}

// number is the place of token's lexeme, added if new, -1 for a stop word.
func (d *tsBuilder) number(token string) int32 {
	lexeme, ok := englishLexeme(token)
	if !ok {
		return -1
	}
	n, seen := d.numberOf[lexeme]
	if !seen {
		n = int32(len(d.lexemes))
		d.numberOf[lexeme] = n
		d.lexemes = append(d.lexemes, lexeme)
		d.kept = append(d.kept, 0)
	}
	return n
}

// text is the document in tsvector's text form: each lexeme with its
// positions in order, at most 256.
func (d *tsBuilder) text() string {
	// Group the hits by lexeme, keeping their order.
	start := make([]int32, len(d.lexemes)+1)
	for _, h := range d.hits {
		start[h.lexeme+1]++
	}
	for i := range d.lexemes {
		start[i+1] += start[i]
	}
	grouped := make([]tsHit, len(d.hits))
	next := slices.Clone(start[:len(d.lexemes)])
	for _, h := range d.hits {
		grouped[next[h.lexeme]] = h
		next[h.lexeme]++
	}
	b := make([]byte, 0, 8*len(d.hits)+12*len(d.lexemes))
	for i, lexeme := range d.lexemes {
		if i > 0 {
			b = append(b, ' ')
		}
		// A lexeme is letters and digits only: no quote to escape.
		b = append(b, '\'')
		b = append(b, lexeme...)
		b = append(b, "':"...)
		at := grouped[start[i]:start[i+1]]
		for j, h := range at[:min(len(at), tsMaxPositions)] {
			if j > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendUint(b, uint64(h.pos), 10)
			b = append(b, h.weight)
		}
	}
	return string(b)
}

// splitScientific splits a word that PostgreSQL's parser reads as two
// tokens: one that starts with a number in scientific notation ("1e5")
// and goes on with a letter ("1e5items": "1e5" and "items"). Any other
// word is one token (rest "").
func splitScientific(w string) (number, rest string) {
	digits := func(i int) int {
		for i < len(w) && w[i] >= '0' && w[i] <= '9' {
			i++
		}
		return i
	}
	mantissa := digits(0)
	if mantissa == 0 || mantissa == len(w) || w[mantissa] != 'e' {
		return w, ""
	}
	end := digits(mantissa + 1)
	if end == mantissa+1 {
		return w, ""
	}
	return w[:end], w[end:]
}

// englishLexeme is the lexeme of one of the parser's tokens, false for a
// stop word: a token with a digit is kept as it is, any other stemmed.
func englishLexeme(token string) (string, bool) {
	for i := 0; i < len(token); i++ {
		if '0' <= token[i] && token[i] <= '9' {
			return token, true
		}
	}
	return englishStems.stem(token)
}

// stemCache remembers the stems of the words it has seen, up to its limit,
// as mail repeats its words: stemming one takes a microsecond or more.
type stemCache struct {
	mu    sync.Mutex
	stems map[string]string // "" for a stop word
	limit int
}

var englishStems = &stemCache{stems: make(map[string]string), limit: 1 << 14}

func (c *stemCache) stem(word string) (string, bool) {
	c.mu.Lock()
	s, ok := c.stems[word]
	c.mu.Unlock()
	if !ok {
		if !english.IsStopWord(word) {
			s = english.Stem(word, true)
		}
		c.mu.Lock()
		if len(c.stems) >= c.limit {
			clear(c.stems)
		}
		c.stems[strings.Clone(word)] = s
		c.mu.Unlock()
	}
	return s, s != ""
}
