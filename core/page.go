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
)
