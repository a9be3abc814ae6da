package simtel_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/callsign/callsign/adapters/simtel"
	"github.com/callsign/callsign/adapters/telephonytest"
	"github.com/callsign/callsign/ports"
)

func TestContract(t *testing.T) {
	sim := simtel.New()
	telephonytest.Run(t, telephonytest.Harness{
		Telephony: sim, Country: "US", NoNumbers: "FR", InvalidNumber: "+0415",
		Held: func() []string { return slices.Collect(maps.Values(sim.Held())) },
		Sent: func() []ports.SendSMS {
			var out []ports.SendSMS
			for _, m := range sim.Sent() {
				out = append(out, ports.SendSMS{From: m.From, To: m.To, Body: m.Body})
			}
			return out
		},
	})
}
