package mediastream_test

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/callsign/callsign/adapters/mediastream"
	"github.com/callsign/callsign/adapters/mediastream/mediastreamtest"
)

// Two bridged calls joined by Connect: each agent hears what the other
// said, in order, at the real rate, then both get stop; the bridges end
// on the provider's stop.
func TestConnectJoinsTwoCalls(t *testing.T) {
	words := [2][]byte{bytes.Repeat([]byte{0x10, 0x20, 0x30, 0x40}, 1200), bytes.Repeat([]byte{0x51, 0x62}, 2000)}
	var agents [2]*mediastreamtest.EchoAgent
	var legs [2]mediastream.Leg
	var media [2]*media
	for i := range agents {
		agents[i] = &mediastreamtest.EchoAgent{Speak: words[i]}
		media[i] = serveMedia(t, serveAgent(t, agents[i]), mediastream.DialOptions{}, nil)
		legs[i] = mediastream.Leg{URL: media[i].url, CallSID: "CA" + string(rune('1'+i)), StreamSID: "MZ" + string(rune('1'+i))}
	}
	ctx, hangUp := context.WithCancel(context.Background())
	defer hangUp()
	go func() { // hang up once each has heard the other
		for !bytes.Contains(agents[0].Received().Audio, words[1]) || !bytes.Contains(agents[1].Received().Audio, words[0]) {
			time.Sleep(20 * time.Millisecond)
		}
		hangUp()
	}()
	if err := mediastream.Connect(ctx, legs[0], legs[1]); err != nil {
		t.Fatal(err)
	}
	for i, a := range agents {
		<-a.Done()
		got, other := a.Received(), words[1-i]
		at := slices.IndexFunc(got.Audio, func(u byte) bool { return u != 0xff })
		if !got.Stopped || at < 0 || !bytes.HasPrefix(got.Audio[at:], other) || slices.ContainsFunc(got.Audio[at+len(other):], func(u byte) bool { return u != 0xff }) {
			t.Errorf("agent %d heard %d samples, sound from %d, stop %v", i, len(got.Audio), at, got.Stopped)
		}
		if st := <-media[i].stats; st.Reason != mediastream.ReasonStop || st.FramesDropped != 0 {
			t.Errorf("bridge %d: %+v", i, st)
		}
	}
}
