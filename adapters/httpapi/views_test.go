package httpapi

import (
	"encoding/json"
	"testing"
	"time"
)

func TestTimesRenderInUTCWithMicroseconds(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6_007_000, time.FixedZone("", 2*3600))
	got, err := json.Marshal(struct {
		At    apiTime  `json:"at"`
		Maybe *apiTime `json:"maybe"`
		Never *apiTime `json:"never"`
	}{apiTime(at), optTime(&at), optTime(nil)})
	if want := `{"at":"2026-01-02T01:04:05.006007Z","maybe":"2026-01-02T01:04:05.006007Z","never":null}`; err != nil || string(got) != want {
		t.Fatalf("got %s, %v; want %s", got, err, want)
	}
}
