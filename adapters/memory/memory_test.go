package memory_test

import (
	"testing"

	"github.com/callsign/callsign/adapters/memory"
	"github.com/callsign/callsign/adapters/storetest"
	"github.com/callsign/callsign/ports"
)

func TestStoreContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) ports.Store { return memory.NewStore() })
}
