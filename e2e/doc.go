// Package e2e holds the end-to-end tests and benchmarks: each starts the
// whole service in-process (internal/server) on loopback ports, over
// SQLite and, when CALLSIGN_TEST_POSTGRES_URL is set, PostgreSQL, and
// drives it through its REST API, SMTP, IMAP, MCP and the command line
// (internal/cli). The tests tagged faults (make test-faults) cut the
// database and the relay under load.
package e2e
