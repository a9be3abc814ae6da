package ports

import "github.com/callsign/callsign/core"

// DSNReader reads delivery status notifications (RFC 3464).
type DSNReader interface {
	// ReadDSN reads raw as a report; ok is false when it is none (an
	// auto-reply, a plain-text bounce, any other mail).
	ReadDSN(raw []byte) (dsn core.DSN, ok bool)
}
