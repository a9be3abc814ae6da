package sqlstore_test

import (
	"testing"

	"github.com/callsign/callsign/adapters/sqlstore/sqlstoretest"
	"github.com/callsign/callsign/adapters/storetest"
	"github.com/callsign/callsign/ports"
)

func TestStoreContract(t *testing.T) {
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			storetest.Run(t, func(t *testing.T) ports.Store { return sqlstoretest.Open(t, d) })
		})
	}
}
