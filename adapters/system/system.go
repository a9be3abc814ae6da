// Package system holds the production clock and identifier source.
package system

import (
	"time"

	"github.com/google/uuid"
)

// Clock is the wall clock.
type Clock struct{}

// Now is the current time in UTC.
func (Clock) Now() time.Time { return time.Now().UTC() }

// IDs mints random (version 4) UUIDs.
type IDs struct{}

// NewUUID returns a new random UUID.
func (IDs) NewUUID() string { return uuid.NewString() }
