package mediastream

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// PlayOptions are the provider's side of a call, as PlayProvider plays it.
type PlayOptions struct {
	CallSID, StreamSID, AccountSID string
	CustomParameters               map[string]string
	// Duration of audio sent: Audio (μ-law, repeated as needed), or a
	// 440 Hz tone when Audio is empty.
	Duration time.Duration
	Audio    []byte
	// Digits are sent as dtmf messages, spread over the call.
	Digits string
	// Realtime paces frames every 20 ms, as a provider does; otherwise
	// they are sent as fast as the socket takes them.
	Realtime bool
	// EchoWait: after the last frame, wait up to this long until as many
	// frames came back as were sent (an echoing agent's last ones), then
	// stop. 0 stops at once.
	EchoWait time.Duration
}

// PlayStats are what the provider's side saw.
type PlayStats struct {
	FramesSent, FramesReceived, Marks int
}

// PlayProvider plays the provider's side of a media stream against url
// (with header, e.g. a signature), as Twilio does: connected, start, media
// frames of 20 ms with dtmf among them, stop; it counts the media and
// marks that come back.
func PlayProvider(ctx context.Context, url string, header http.Header, opts PlayOptions) (PlayStats, error) {
	c, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: header, CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		return PlayStats{}, err
	}
	defer c.CloseNow()
	c.SetReadLimit(MaxMessageBytes)

	var received, marks atomic.Int64
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		for {
			_, data, err := c.Read(ctx)
			if err != nil {
				return
			}
			if m, err := ParseMessage(data); err == nil && m.Event == EventMedia {
				received.Add(1)
			} else if err == nil && m.Event == EventMark {
				marks.Add(1)
			}
		}
	}()

	p := player{c: c, sid: opts.StreamSID}
	audio := opts.Audio
	if len(audio) == 0 {
		audio = Tone440(time.Second)
	}
	frames := int(opts.Duration / (20 * time.Millisecond))
	p.send(ctx, Message{Event: EventConnected, Protocol: "Call", Version: "1.0.0"})
	p.send(ctx, Message{Event: EventStart, Start: &Start{AccountSid: opts.AccountSID, StreamSid: opts.StreamSID, CallSid: opts.CallSID,
		Tracks: []string{"inbound"}, CustomParameters: opts.CustomParameters, MediaFormat: PhoneFormat}})
	var tick <-chan time.Time
	if opts.Realtime {
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		tick = t.C
	}
	digits, frame := []byte(opts.Digits), make([]byte, frameSamples)
	for i := range frames {
		if tick != nil {
			select {
			case <-tick:
			case <-ctx.Done():
			}
		}
		if p.err != nil || ctx.Err() != nil {
			break // hung up, or the socket failed: the rest of a long call is not played
		}
		for j := range frame {
			frame[j] = audio[(i*frameSamples+j)%len(audio)]
		}
		p.send(ctx, Message{Event: EventMedia, Media: &Media{Track: "inbound", Chunk: strconv.Itoa(i + 1),
			Timestamp: strconv.Itoa(i * 20), Payload: base64.StdEncoding.EncodeToString(frame)}})
		// digit k goes after frame (k+1)·frames/(len+1): spread evenly
		if len(digits) > 0 && (i+1)*(len(opts.Digits)+1) >= (len(opts.Digits)-len(digits)+1)*frames {
			p.send(ctx, Message{Event: EventDTMF, DTMF: &DTMF{Track: "inbound_track", Digit: string(digits[0])}})
			digits = digits[1:]
		}
	}
	for _, d := range digits { // a call too short to spread them over
		p.send(ctx, Message{Event: EventDTMF, DTMF: &DTMF{Track: "inbound_track", Digit: string(d)}})
	}
	if p.err == nil && opts.EchoWait > 0 {
		waitUntil(ctx, opts.EchoWait, func() bool { return received.Load() >= int64(frames) })
	}
	p.send(ctx, Message{Event: EventStop, Stop: &Stop{AccountSid: opts.AccountSID, CallSid: opts.CallSID}})
	if p.err == nil {
		_ = c.Close(websocket.StatusNormalClosure, "")
	}
	_ = c.CloseNow()
	<-readDone
	return PlayStats{FramesSent: p.media, FramesReceived: int(received.Load()), Marks: int(marks.Load())}, p.err
}

// player numbers and sends the provider's messages; after a failure it
// sends nothing more.
type player struct {
	c     *websocket.Conn
	sid   string
	seq   int
	media int
	err   error
}

func (p *player) send(ctx context.Context, m Message) {
	if p.err != nil {
		return
	}
	if m.Event != EventConnected {
		p.seq++
		m.SequenceNumber, m.StreamSid = strconv.Itoa(p.seq), p.sid
	}
	data, _ := json.Marshal(m)
	if p.err = p.c.Write(ctx, websocket.MessageText, data); p.err == nil && m.Event == EventMedia {
		p.media++
	}
}

// waitUntil polls done every 10 ms for up to d.
func waitUntil(ctx context.Context, d time.Duration, done func() bool) {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for !done() {
		select {
		case <-t.C:
		case <-deadline.C:
			return
		case <-ctx.Done():
			return
		}
	}
}
