package mediastream

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// DecodeWAV checks a recording's header against its size and returns its
// two channels (for the package's external tests too).
func DecodeWAV(b []byte) (left, right []int16, err error) {
	if len(b) < wavHeader || !bytes.Equal(b[:wavHeader-4], wavHeaderFor(int64(len(b)-wavHeader) / 4)[:wavHeader-4]) {
		return nil, nil, errors.New("not a stereo 16-bit 8 kHz PCM WAV")
	}
	if size := binary.LittleEndian.Uint32(b[40:]); int(size) != len(b)-wavHeader || size%4 != 0 {
		return nil, nil, errors.New("the data size is not the file's")
	}
	for i := wavHeader; i < len(b); i += 4 {
		left = append(left, int16(binary.LittleEndian.Uint16(b[i:])))
		right = append(right, int16(binary.LittleEndian.Uint16(b[i+2:])))
	}
	return left, right, nil
}

func decoded(mulaw ...[]byte) []int16 {
	var out []int16
	for _, b := range mulaw {
		for _, u := range b {
			out = append(out, MulawToPCM(u))
		}
	}
	return out
}

func fill(n int, u byte) []byte { return bytes.Repeat([]byte{u}, n) }

func TestRecorderAlignsByTime(t *testing.T) {
	path := filepath.Join(t.TempDir(), "call.wav")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := NewRecorder(f, 0)
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := fill(160, 0x10), fill(160, 0x20), fill(160, 0x30)
	x1, x2, x3 := fill(160, 0x90), fill(400, 0xa0), fill(80, 0xb0)
	r.caller(0, a)
	r.agentAudio(x1) // plays from now, 20 ms
	r.caller(20, b)
	r.agentAudio(x2) // a burst: held, plays on as the caller's clock moves
	r.caller(60, c)  // 40-60 ms lost: silence on the left
	r.clear()        // drops the burst's last 80 samples, not yet played
	r.agentAudio(x3)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	left, right, err := DecodeWAV(raw)
	if err != nil {
		t.Fatal(err)
	}
	quiet := fill(160, silence)
	if want := decoded(a, b, quiet, c, quiet[:80]); !slices.Equal(left, want) {
		t.Errorf("left: %d samples, want %d: %v", len(left), len(want), left)
	}
	if want := decoded(quiet, x1, x2[:320], x3); !slices.Equal(right, want) {
		t.Errorf("right: %d samples, want %d", len(right), len(want))
	}
	if r.Bytes() != int64(len(raw)) {
		t.Errorf("Bytes() = %d, the file has %d", r.Bytes(), len(raw))
	}
}

func TestRecorderKeepsToItsLimit(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "call.wav"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, _ := NewRecorder(f, 10*time.Millisecond) // 80 samples
	r.caller(0, fill(160, 0x10))
	r.agentAudio(fill(1000, 0x90))
	r.caller(3_600_000, fill(160, 0x10)) // an hour later: not a byte more
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if r.Bytes() != wavHeader+80*4 || len(r.agent) != 0 {
		t.Errorf("%d bytes, %d agent samples held", r.Bytes(), len(r.agent))
	}
}
