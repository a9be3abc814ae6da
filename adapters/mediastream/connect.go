package mediastream

import (
	"context"
	"encoding/base64"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// Leg is one side of a call that Connect joins: the media URL of that
// side's call, the upgrade's header (a signature), and the provider's ids.
type Leg struct {
	URL                            string
	Header                         http.Header
	CallSID, StreamSID, AccountSID string
}

// maxHeld bounds the audio an agent sent ahead of what the other side has
// heard: 20 s, as the recorder holds it.
const maxHeld = maxAgentLead

// Connect plays the provider's side of two media streams joined as one
// call, as the simulator's network does for a call between two numbers of
// this service: each side gets connected and start, then every 20 ms a
// frame of what the other side's agent sent (played in order, as a
// provider plays an agent's audio; silence when there is none; a clear
// drops what has not played), until ctx ends or either side closes. Both
// sides then get stop.
func Connect(ctx context.Context, a, b Leg) error {
	var legs [2]*player
	for i, l := range []Leg{a, b} {
		c, _, err := websocket.Dial(ctx, l.URL, &websocket.DialOptions{HTTPHeader: l.Header, CompressionMode: websocket.CompressionDisabled})
		if err != nil {
			return err
		}
		defer c.CloseNow()
		c.SetReadLimit(MaxMessageBytes)
		legs[i] = &player{c: c, sid: l.StreamSID}
	}
	// Writes outlive ctx, so that a hung-up call still sends its stops.
	sockets := context.WithoutCancel(ctx)
	ctx, hangUp := context.WithCancel(ctx)
	defer hangUp()
	var heard [2]heldAudio // heard[i]: what side i's agent is to hear
	var listening sync.WaitGroup
	for i, l := range []Leg{a, b} {
		p := legs[i]
		p.send(sockets, Message{Event: EventConnected, Protocol: "Call", Version: "1.0.0"})
		p.send(sockets, Message{Event: EventStart, Start: &Start{AccountSid: l.AccountSID, StreamSid: l.StreamSID, CallSid: l.CallSID,
			Tracks: []string{"inbound"}, MediaFormat: PhoneFormat}})
		listening.Add(1)
		go func() {
			defer listening.Done()
			defer hangUp() // either side's end ends the call
			listen(sockets, p.c, &heard[1-i])
		}()
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	frame := make([]byte, frameSamples)
	for n := 0; ; n++ {
		select {
		case <-tick.C:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		for i, p := range legs {
			heard[i].take(frame)
			p.send(sockets, Message{Event: EventMedia, Media: &Media{Track: "inbound", Chunk: strconv.Itoa(n + 1),
				Timestamp: strconv.Itoa(n * 20), Payload: base64.StdEncoding.EncodeToString(frame)}})
			if p.err != nil {
				hangUp()
			}
		}
	}
	ending, cancel := context.WithTimeout(sockets, drainTimeout)
	defer cancel()
	for i, l := range []Leg{a, b} {
		p := legs[i]
		p.send(ending, Message{Event: EventStop, Stop: &Stop{AccountSid: l.AccountSID, CallSid: l.CallSID}})
		if p.err == nil {
			_ = p.c.Close(websocket.StatusNormalClosure, "")
		}
		_ = p.c.CloseNow()
	}
	listening.Wait()
	return nil
}

// listen reads one side's messages until its socket ends: its agent's
// media is held for the other side, and its clear drops what is held.
func listen(ctx context.Context, c *websocket.Conn, other *heldAudio) {
	for {
		_, data, err := c.Read(ctx)
		if err != nil {
			return
		}
		m, err := ParseMessage(data)
		switch {
		case err != nil:
		case m.Event == EventMedia:
			if audio, err := base64.StdEncoding.DecodeString(m.Media.Payload); err == nil {
				other.add(audio)
			}
		case m.Event == EventClear:
			other.clear()
		}
	}
}

// heldAudio is μ-law one side has been sent and not yet played.
type heldAudio struct {
	mu    sync.Mutex
	audio []byte
}

func (h *heldAudio) add(audio []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.audio = append(h.audio, audio[:min(len(audio), max(0, maxHeld-len(h.audio)))]...)
}

func (h *heldAudio) clear() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.audio = h.audio[:0]
}

// take fills frame with the audio held next, then silence.
func (h *heldAudio) take(frame []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := copy(frame, h.audio)
	for i := n; i < len(frame); i++ {
		frame[i] = silence
	}
	h.audio = h.audio[:copy(h.audio, h.audio[n:])]
}
