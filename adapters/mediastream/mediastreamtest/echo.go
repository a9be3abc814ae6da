// Package mediastreamtest has a voice agent for tests: it speaks Twilio's
// Media Streams protocol, echoes the caller's audio (or says its own) and
// keeps what it got.
package mediastreamtest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/callsign/callsign/adapters/mediastream"
)

// EchoAgent is an http.Handler for one call: it echoes each media frame
// back, answers each dtmf with a mark named after the digit, and keeps the
// start, the decoded audio, the digits and whether stop came.
type EchoAgent struct {
	// Secret, when set, is checked on the upgrade (URL is the agent URL
	// exactly as dialed); a bad signature is 403.
	Secret, URL string
	// Speak, when set, is μ-law the agent sends as soon as start comes,
	// in 20 ms frames all at once (as agents send speech faster than it
	// plays), instead of echoing: its audio can be told from the caller's.
	Speak []byte

	mu     sync.Mutex
	got    Received
	doneCh chan struct{}
	once   sync.Once
}

// Received is what the agent got.
type Received struct {
	Start   *mediastream.Start
	Audio   []byte // the μ-law of every media frame, in order
	Frames  int
	Digits  string
	Stopped bool
}

// ServeHTTP serves the agent's side of a call.
func (a *EchoAgent) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer a.once.Do(func() { close(a.done()) })
	if a.Secret != "" {
		if err := mediastream.VerifyAgentRequest(r, a.URL, a.Secret, time.Now()); err != nil {
			http.Error(w, err.Error(), http.StatusForbidden)
			return
		}
	}
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer c.CloseNow()
	ctx := context.Background()
	for {
		_, data, err := c.Read(ctx)
		if err != nil {
			return
		}
		m, err := mediastream.ParseMessage(data)
		if err != nil {
			return
		}
		var reply *mediastream.Message
		a.mu.Lock()
		switch m.Event {
		case mediastream.EventStart:
			a.got.Start = m.Start
		case mediastream.EventMedia:
			audio, _ := base64.StdEncoding.DecodeString(m.Media.Payload)
			a.got.Audio = append(a.got.Audio, audio...)
			a.got.Frames++
			if a.Speak == nil {
				reply = &mediastream.Message{Event: mediastream.EventMedia, StreamSid: m.StreamSid, Media: &mediastream.Media{Payload: m.Media.Payload}}
			}
		case mediastream.EventDTMF:
			a.got.Digits += m.DTMF.Digit
			reply = &mediastream.Message{Event: mediastream.EventMark, StreamSid: m.StreamSid, Mark: &mediastream.Mark{Name: m.DTMF.Digit}}
		case mediastream.EventStop:
			a.got.Stopped = true
		}
		a.mu.Unlock()
		if m.Event == mediastream.EventStart && a.Speak != nil && !a.say(ctx, c, m.StreamSid) {
			return
		}
		if m.Event == mediastream.EventStop {
			_ = c.Close(websocket.StatusNormalClosure, "")
			return
		}
		if reply != nil {
			out, _ := json.Marshal(reply)
			if c.Write(ctx, websocket.MessageText, out) != nil {
				return
			}
		}
	}
}

// say sends Speak in 20 ms frames; false when the socket failed.
func (a *EchoAgent) say(ctx context.Context, c *websocket.Conn, streamSid string) bool {
	for rest := a.Speak; len(rest) > 0; {
		frame := rest[:min(len(rest), 160)]
		rest = rest[len(frame):]
		out, _ := json.Marshal(mediastream.Message{Event: mediastream.EventMedia, StreamSid: streamSid,
			Media: &mediastream.Media{Payload: base64.StdEncoding.EncodeToString(frame)}})
		if c.Write(ctx, websocket.MessageText, out) != nil {
			return false
		}
	}
	return true
}

func (a *EchoAgent) done() chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.doneCh == nil {
		a.doneCh = make(chan struct{})
	}
	return a.doneCh
}

// Done is closed when the agent's call has ended.
func (a *EchoAgent) Done() <-chan struct{} { return a.done() }

// Received is what the agent has got so far.
func (a *EchoAgent) Received() Received {
	a.mu.Lock()
	defer a.mu.Unlock()
	got := a.got
	got.Audio = append([]byte(nil), got.Audio...)
	return got
}
