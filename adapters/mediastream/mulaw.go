package mediastream

import (
	"math"
	"time"
)

// MulawToPCM decodes one G.711 μ-law byte to a 16-bit linear sample.
func MulawToPCM(u byte) int16 {
	u = ^u
	t := (int16(u&0x0f) << 3) + 0x84
	t <<= (u & 0x70) >> 4
	if u&0x80 != 0 {
		return 0x84 - t
	}
	return t - 0x84
}

// PCMToMulaw encodes one 16-bit linear sample as G.711 μ-law.
func PCMToMulaw(s int16) byte {
	const bias, clip = 0x84, 32635
	v, sign := int32(s), byte(0)
	if v < 0 {
		v, sign = -v, 0x80
	}
	v = min(v, clip) + bias
	exp := byte(7)
	for mask := int32(0x4000); v&mask == 0 && exp > 0; mask >>= 1 {
		exp--
	}
	mantissa := byte(v>>(exp+3)) & 0x0f
	return ^(sign | exp<<4 | mantissa)
}

// silence is μ-law for the sample 0.
const silence = 0xff

// Tone440 is d of a 440 Hz tone at half scale, as 8 kHz μ-law.
func Tone440(d time.Duration) []byte {
	out := make([]byte, int(d.Seconds()*sampleRate))
	for i := range out {
		out[i] = PCMToMulaw(int16(16000 * math.Sin(2*math.Pi*440*float64(i)/sampleRate)))
	}
	return out
}
