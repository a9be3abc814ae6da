package core

// Lists page as the spec's email message list does (spec §8): `limit`
// items from `offset`. Every list that can grow follows the same numbers.
const (
	// DefaultPageLimit is the page size when a caller pages without a limit.
	DefaultPageLimit = 50
	// MaxPageLimit is the largest page; larger limits count as it.
	MaxPageLimit = 200
	// MaxUnpagedList bounds a list asked for without limit or offset (the
	// spec's plain array): at most this many items, the rest on later pages.
	MaxUnpagedList = 1000
	// MaxCounted bounds the count of a page's envelope: counting every
	// match costs a walk over all of them on every page, so past this many
	// the count stops and says "at least" unless the caller asks for the
	// exact number.
	MaxCounted = 1_000
)

// CountBound is how many matches a page of limit items from offset counts
// at most: MaxCounted, or enough to know whether a next page exists.
func CountBound(offset, limit int) int { return max(MaxCounted, offset+limit+1) }
