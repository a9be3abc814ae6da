package core

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode"
)

// previewByRunes is Preview as it was first written, one character at a
// time: the copying of ASCII runs must give the same previews.
func previewByRunes(text string) string {
	var b strings.Builder
	n, space := 0, false
	for _, r := range text {
		if unicode.IsSpace(r) {
			space = b.Len() > 0
			continue
		}
		if space {
			if n++; n > PreviewLength {
				break
			}
			b.WriteByte(' ')
			space = false
		}
		if n++; n > PreviewLength {
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}

func TestPreviewCopiesRunsAsTheRunesWouldBe(t *testing.T) {
	pieces := []string{"a", "word", " ", "  ", "\r\n", "\t", "é", "\u00a0", "\u2003", "\u0085", "\xff", "\xe2\x82", "日本", ".", "\x01", "\x7f", "a b c", strings.Repeat("x", 150)}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		var b strings.Builder
		for range rng.IntN(60) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		in := b.String()
		if got, want := Preview(in), previewByRunes(in); got != want {
			t.Fatalf("Preview(%q) = %q, want %q", in, got, want)
		}
	}
	// A run of ASCII that ends at the length, with a space before it or not.
	for k := PreviewLength - 3; k <= PreviewLength+3; k++ {
		for _, in := range []string{strings.Repeat("y", k) + " z", "  " + strings.Repeat("y", k-1) + "\n\nz", strings.Repeat("y ", k)} {
			if got, want := Preview(in), previewByRunes(in); got != want {
				t.Fatalf("Preview(%q) = %q, want %q", in, got, want)
			}
		}
	}
}
