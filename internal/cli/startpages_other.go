//go:build !linux

package cli

// releaseStartupPages is Linux's only (startpages_linux.go).
func releaseStartupPages() error { return nil }
