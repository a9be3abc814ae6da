package mediastream

import (
	"testing"
	"time"
)

func TestMulaw(t *testing.T) {
	// G.711's extremes and zeros.
	for u, want := range map[byte]int16{0xff: 0, 0x7f: 0, 0x00: -32124, 0x80: 32124, 0xfe: 8, 0x7e: -8} {
		if got := MulawToPCM(u); got != want {
			t.Errorf("MulawToPCM(%#x) = %d, want %d", u, got, want)
		}
	}
	for u := range 256 {
		if u == 0x7f { // "-0": encodes back as +0
			continue
		}
		if got := PCMToMulaw(MulawToPCM(byte(u))); got != byte(u) {
			t.Errorf("PCMToMulaw(MulawToPCM(%#x)) = %#x", u, got)
		}
	}
	if PCMToMulaw(32767) != 0x80 || PCMToMulaw(-32768) != 0x00 {
		t.Error("full scale is not clipped to the largest code")
	}
	if tone := Tone440(20 * time.Millisecond); len(tone) != frameSamples || tone[0] != silence {
		t.Errorf("Tone440: %d samples starting %#x", len(tone), tone[0])
	}
}
