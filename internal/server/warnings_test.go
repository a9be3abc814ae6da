package server

import (
	"strings"
	"testing"

	"github.com/callsign/callsign/config"
)

// A relay left set while another provider carries outbound mail is named
// at start-up; a relay in use, or none, says nothing.
func TestRelayWarning(t *testing.T) {
	relay := &config.Relay{Host: "smtp.example.com", Port: "587"}
	for _, tc := range []struct {
		provider string
		relay    *config.Relay
		warns    bool
	}{
		{"ses", relay, true},
		{"mailgun", relay, true},
		{"smtp", relay, false},
		{"", relay, false},
		{"ses", nil, false},
	} {
		w := relayWarning(config.Config{MailProvider: tc.provider, SMTPRelay: tc.relay})
		if (w != "") != tc.warns || (tc.warns && !strings.Contains(w, "CALLSIGN_MAIL_PROVIDER="+tc.provider)) {
			t.Errorf("provider %q, relay %v: %q", tc.provider, tc.relay != nil, w)
		}
	}
}
