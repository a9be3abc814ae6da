package core

import "fmt"

// HiddenRune is the first character of s that a reader cannot see or that
// reorders what they see: C0 and C1 controls (tab and line breaks
// included), zero-width characters and marks (U+200B–U+200F, U+2060–U+2064,
// U+FEFF, U+061C), line and paragraph separators (U+2028, U+2029) and the
// bidirectional embeddings, overrides and isolates (U+202A–U+202E,
// U+2066–U+2069). "\u202eevil@example.org" reads as another address than
// it is; names and patterns holding such characters mislead the same way.
func HiddenRune(s string) (rune, bool) {
	for _, r := range s {
		switch {
		case r < 0x20, r >= 0x7f && r <= 0x9f,
			r >= 0x200b && r <= 0x200f, r >= 0x2060 && r <= 0x2064, r == 0xfeff, r == 0x061c,
			r == 0x2028, r == 0x2029,
			r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			return r, true
		}
	}
	return 0, false
}

// CheckVisible refuses (400 on field) a value holding a HiddenRune. Every
// address, display name, contact field and rule pattern a caller gives
// passes through it.
func CheckVisible(field, s string) error {
	if r, ok := HiddenRune(s); ok {
		return Invalid(field, "%s", hiddenRuneMessage(r))
	}
	return nil
}

func hiddenRuneMessage(r rune) string {
	return fmt.Sprintf("Invisible and control characters are not allowed (U+%04X).", r)
}
