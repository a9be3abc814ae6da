package app_test

import (
	"testing"

	"github.com/callsign/callsign/app"
	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine running: every
// goroutine a service starts must end with its context or App.Close.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newApp builds the services and closes them when the test ends.
func newApp(t testing.TB, deps app.Deps) *app.App {
	a := app.New(deps)
	t.Cleanup(a.Close)
	return a
}
