package server

import (
	"io"
	"log/slog"
	"net"

	"github.com/callsign/callsign/adapters/metrics"
	"github.com/callsign/callsign/adapters/simtel"
	"github.com/callsign/callsign/adapters/sqlstore"
	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/config"
)

// NewLogger is the service's log: text lines to w at level ("debug",
// "info", "warn", "error"; info when unknown).
func NewLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level))
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l}))
}

// Config is the configuration the service was opened with.
func (s *Service) Config() config.Config { return s.cfg }

// Log is the service's log.
func (s *Service) Log() *slog.Logger { return s.log }

// App is the application the listeners serve, for the administrative
// commands and for tests that act below the API.
func (s *Service) App() *app.App { return s.app }

// DB is the database, for the administrative commands.
func (s *Service) DB() *sqlstore.DB { return s.db }

// Sim is the telephony simulator, nil unless it is the provider.
func (s *Service) Sim() *simtel.Sim { return s.sim }

// Metrics are the service's metrics, nil unless CALLSIGN_METRICS_ADDR is set.
func (s *Service) Metrics() *metrics.Metrics { return s.metrics }

// HTTPAddr, SMTPAddr, IMAPAddr and MetricsAddr are the addresses Listen
// bound (the ports chosen for port 0); MetricsAddr is "" without metrics.
func (s *Service) HTTPAddr() string    { return addr(s.httpLn) }
func (s *Service) SMTPAddr() string    { return addr(s.smtpLn) }
func (s *Service) IMAPAddr() string    { return addr(s.imapLn) }
func (s *Service) MetricsAddr() string { return addr(s.metricsLn) }

// HTTPSAddr and IMAPSAddr are "" when those listeners are off.
func (s *Service) HTTPSAddr() string { return addr(s.httpsLn) }
func (s *Service) IMAPSAddr() string { return addr(s.imapsLn) }

func addr(ln net.Listener) string {
	if ln == nil {
		return ""
	}
	return ln.Addr().String()
}

// StillRunning names what shutdown is still waiting for, such as
// "SMTP (1 open session), outbox"; "nothing" when nothing is.
func (s *Service) StillRunning() string { return s.drain.describe() }
