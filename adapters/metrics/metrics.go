// Package metrics is Callsign's Prometheus side (client_golang): it is the
// app's observer, counts the API's requests and the SMTP sessions, reads
// gauges when scraped, and serves them with Go's and the process's own.
// Names follow Prometheus conventions: callsign_…_total for counters,
// base units (seconds) in the name, labels of few values.
package metrics

import (
	"database/sql"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics holds every metric in a registry of its own.
type Metrics struct {
	registry *prometheus.Registry

	inbound        *prometheus.CounterVec
	ingestSeconds  prometheus.Histogram
	attempts       *prometheus.CounterVec
	attemptSeconds prometheus.Histogram
	sms            *prometheus.CounterVec
	spamChecks     *prometheus.CounterVec
	requests       *prometheus.CounterVec
	requestSeconds *prometheus.HistogramVec
	smtpSessions   prometheus.Counter
	commitBatch    prometheus.Histogram
	walRestart     prometheus.Histogram
}

// New makes the metrics, with Go's runtime and the process's.
func New() *Metrics {
	m := &Metrics{registry: prometheus.NewRegistry()}
	m.inbound = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "callsign_inbound_messages_total",
		Help: "Messages offered to our inboxes (SMTP and IMAP sources) by result: accepted, unreadable, too_large, failed."}, []string{"result"})
	m.ingestSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "callsign_mail_ingest_duration_seconds",
		Help: "Time to parse and durably store an inbound message.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 14)})
	m.attempts = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "callsign_outbound_attempts_total",
		Help: "Outbox delivery attempts by outcome: sent, failed, retry, error."}, []string{"outcome"})
	m.attemptSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "callsign_outbound_attempt_duration_seconds",
		Help: "Time of one outbox attempt at one message, relay included.", Buckets: prometheus.ExponentialBuckets(0.005, 2, 14)})
	m.sms = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "callsign_sms_messages_total",
		Help: "Text messages by direction (incoming, outgoing) and outcome."}, []string{"direction", "outcome"})
	m.spamChecks = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "callsign_spam_checks_total",
		Help: "Received messages judged by rspamd, by outcome: ham, spam, refused, deferred, unavailable (accepted unjudged)."}, []string{"outcome"})
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "callsign_http_requests_total",
		Help: "REST API requests by method, route pattern and status."}, []string{"method", "route", "status"})
	m.requestSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "callsign_http_request_duration_seconds",
		Help: "REST API request latency by method and route pattern.", Buckets: prometheus.DefBuckets}, []string{"method", "route"})
	m.smtpSessions = prometheus.NewCounter(prometheus.CounterOpts{Name: "callsign_smtp_sessions_total",
		Help: "SMTP connections accepted."})
	m.commitBatch = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "callsign_mail_commit_batch_messages",
		Help: "Messages stored per group commit of the database.", Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128}})
	m.walRestart = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "callsign_sqlite_wal_restart_seconds",
		Help: "Time each restart of SQLite's write-ahead log held the writer.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 12)})
	m.registry.MustRegister(m.inbound, m.ingestSeconds, m.attempts, m.attemptSeconds, m.sms, m.spamChecks, m.requests, m.requestSeconds,
		m.smtpSessions, m.commitBatch, m.walRestart,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the metrics in Prometheus's exposition formats.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{Registry: m.registry})
}

// Registry is where the metrics live, for tests that gather them.
func (m *Metrics) Registry() *prometheus.Registry { return m.registry }

// Gauge registers a gauge that f reads at each scrape.
func (m *Metrics) Gauge(name, help string, f func() float64) {
	m.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f))
}

// DBPool adds a database/sql pool's statistics (go_sql_…, labelled
// db_name=role).
func (m *Metrics) DBPool(role string, db *sql.DB) {
	m.registry.MustRegister(collectors.NewDBStatsCollector(db, role))
}

// InboundMail implements ports.Observer.
func (m *Metrics) InboundMail(result string, took time.Duration) {
	m.inbound.WithLabelValues(result).Inc()
	if result == "accepted" {
		m.ingestSeconds.Observe(took.Seconds())
	}
}

// OutboundAttempt implements ports.Observer.
func (m *Metrics) OutboundAttempt(outcome string, took time.Duration) {
	m.attempts.WithLabelValues(outcome).Inc()
	m.attemptSeconds.Observe(took.Seconds())
}

// SMS implements ports.Observer.
func (m *Metrics) SMS(direction, outcome string) { m.sms.WithLabelValues(direction, outcome).Inc() }

// SpamCheck implements ports.Observer.
func (m *Metrics) SpamCheck(outcome string) { m.spamChecks.WithLabelValues(outcome).Inc() }

// Request counts one API request; route is the route's pattern.
func (m *Metrics) Request(method, route string, status int, took time.Duration) {
	method = knownMethod(method)
	m.requests.WithLabelValues(method, route, strconv.Itoa(status)).Inc()
	m.requestSeconds.WithLabelValues(method, route).Observe(took.Seconds())
}

// SMTPSession counts an accepted SMTP connection.
func (m *Metrics) SMTPSession() { m.smtpSessions.Inc() }

// CommitBatch records the size of one group commit.
func (m *Metrics) CommitBatch(messages int) { m.commitBatch.Observe(float64(messages)) }

// WALRestart records how long a restart of SQLite's log held the writer.
func (m *Metrics) WALRestart(held time.Duration) { m.walRestart.Observe(held.Seconds()) }

// knownMethod keeps the method label to the methods HTTP defines: a client
// may send any token, and each would be a series of its own.
func knownMethod(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete,
		http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return method
	}
	return "OTHER"
}
