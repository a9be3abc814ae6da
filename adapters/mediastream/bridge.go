package mediastream

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// Why a bridge ended (Stats.Reason).
const (
	ReasonStop              = "stop"               // the provider's stop: the call ended
	ReasonProviderClosed    = "provider_closed"    // the provider's socket closed without a stop
	ReasonProviderMalformed = "provider_malformed" // a malformed or oversized message from the provider
	ReasonAgentClosed       = "agent_closed"       // the agent's socket closed
	ReasonAgentMalformed    = "agent_malformed"    // a malformed or oversized message from the agent
	ReasonContext           = "context"            // the caller's context ended (hang-up, limit, shutdown)
)

const (
	// queueFrames bounds each direction's queue: 1 s of 20 ms frames.
	queueFrames = 50
	// stallAfter is how long a reader waits on a full queue before it
	// takes the writer for stuck and drops instead: a writer that is
	// moving frees a place in microseconds, so an agent's burst of audio
	// sent ahead waits for it rather than being lost.
	stallAfter = 250 * time.Millisecond
	// drainTimeout is how long the end of a call waits for queued
	// messages (and the stop) to reach a side.
	drainTimeout = time.Second
)

// BridgeOptions are a call's settings.
type BridgeOptions struct {
	// CustomParameters go in the start message sent to the agent
	// (identity, call, from, to, direction); the provider's are not passed.
	CustomParameters map[string]string
	Recorder         *Recorder // nil: not recorded
	Log              *slog.Logger
}

// Stats are a bridged call's counts.
type Stats struct {
	ConnectedAt      time.Time // when the agent was sent start; zero if it never was
	FramesFromCaller int64     // media frames the provider sent
	FramesToCaller   int64     // media frames the agent sent
	FramesDropped    int64     // messages either way dropped because the other side was not reading
	DTMF             int64
	Reason           string
}

// bridge is one call's relay. Each counter belongs to one goroutine and
// is read after they have all ended.
type bridge struct {
	provider, agent *websocket.Conn
	rec             *Recorder
	log             *slog.Logger

	toAgent, toProvider *queue

	mediaPrefix, clearMsg []byte // messages to the provider, with its streamSid
	streamSid             string

	fromCaller, dtmf int64 // readProvider's
	toCaller         int64 // readAgent's
	stopMsg          []byte
}

// queue is one direction's messages waiting for their writer, and the
// buffers they are read or built in, reused once written: a frame costs
// no allocation once a call has warmed up. Only the reader sending on it
// counts dropped.
type queue struct {
	out, free chan []byte
	dropped   int64
	stalled   bool        // the writer has not taken a frame for stallAfter
	wait      *time.Timer // the reader's, reused
}

func newQueue() *queue {
	// free holds what can be out at once: the queue, the message being
	// written, the one being read.
	return &queue{out: make(chan []byte, queueFrames), free: make(chan []byte, queueFrames+2)}
}

// buffer is an empty buffer for a message.
func (q *queue) buffer() []byte {
	select {
	case b := <-q.free:
		return b[:0]
	default:
		return make([]byte, 0, 512) // a 20 ms frame is about 400 bytes
	}
}

// recycle takes back a buffer no longer used.
func (q *queue) recycle(b []byte) {
	select {
	case q.free <- b:
	default:
	}
}

// offer queues m, a buffer from q. On a full queue it waits up to
// stallAfter for the writer (holding the reader back, so the sender's
// socket fills instead of our memory); a writer that took nothing in that
// time is stuck, and from then on frames are dropped and counted at once
// until it has emptied half the queue, so a side that stops reading never holds up the
// other.
func (q *queue) offer(m []byte) {
	select {
	case q.out <- m:
		if len(q.out) <= queueFrames/2 { // the writer has caught up
			q.stalled = false
		}
		return
	default:
	}
	if !q.stalled {
		if q.wait == nil {
			q.wait = time.NewTimer(stallAfter)
		} else {
			q.wait.Reset(stallAfter)
		}
		select {
		case q.out <- m:
			q.wait.Stop()
			return
		case <-q.wait.C:
			q.stalled = true
		}
	}
	q.dropped++
	q.recycle(m)
}

// discard empties the queue.
func (q *queue) discard() {
	for {
		select {
		case m := <-q.out:
			q.recycle(m)
		default:
			return
		}
	}
}

// Bridge relays a call between the provider and the agent until the
// provider's stop, either side's end, or ctx's end, and closes both
// connections. The agent receives connected and a start of its own (with
// opts.CustomParameters), then the provider's media, dtmf, mark and stop
// as sent; the provider receives the agent's media, mark and clear.
func Bridge(ctx context.Context, provider, agent *websocket.Conn, opts BridgeOptions) Stats {
	b := &bridge{provider: provider, agent: agent, rec: opts.Recorder, log: opts.Log, toAgent: newQueue(), toProvider: newQueue()}
	if b.log == nil {
		b.log = slog.Default()
	}
	start, reason := b.awaitStart(ctx)
	if reason == "" {
		reason = b.greetAgent(ctx, start, opts.CustomParameters)
	}
	if reason != "" {
		_, _ = provider.CloseNow(), agent.CloseNow()
		return Stats{Reason: reason}
	}
	stats := Stats{ConnectedAt: time.Now()}
	stats.Reason = b.relay(ctx)
	stats.FramesFromCaller, stats.FramesToCaller, stats.DTMF = b.fromCaller, b.toCaller, b.dtmf
	stats.FramesDropped = b.toAgent.dropped + b.toProvider.dropped
	b.log.Info("media stream ended", "reason", stats.Reason, "stream", b.streamSid, "frames_from_caller", stats.FramesFromCaller,
		"frames_to_caller", stats.FramesToCaller, "frames_dropped", stats.FramesDropped, "dtmf", stats.DTMF)
	return stats
}

// awaitStart reads the provider's connected and start.
func (b *bridge) awaitStart(ctx context.Context) (*Start, string) {
	for {
		_, f, reason := b.read(ctx, b.provider, "provider", nil)
		m := f.full
		switch {
		case reason != "":
			return nil, reason
		case f.event == EventConnected:
		case f.event == EventStart:
			b.streamSid = cmp.Or(m.Start.StreamSid, m.StreamSid)
			sid, _ := json.Marshal(b.streamSid)
			b.mediaPrefix = []byte(`{"event":"media","streamSid":` + string(sid) + `,"media":{"payload":"`)
			b.clearMsg = []byte(`{"event":"clear","streamSid":` + string(sid) + `}`)
			return m.Start, ""
		default:
			b.log.Warn("media stream: provider sent before start; ending the call", "event", f.event)
			return nil, ReasonProviderMalformed
		}
	}
}

// greetAgent sends the agent connected and its start: the provider's
// stream and call ids and format, our parameters, not the provider's
// account.
func (b *bridge) greetAgent(ctx context.Context, s *Start, params map[string]string) string {
	if params == nil {
		params = map[string]string{}
	}
	start, _ := json.Marshal(Message{Event: EventStart, SequenceNumber: "1", StreamSid: b.streamSid, Start: &Start{
		StreamSid: b.streamSid, CallSid: s.CallSid, Tracks: s.Tracks, CustomParameters: params, MediaFormat: s.MediaFormat}})
	ctx, cancel := context.WithTimeout(ctx, drainTimeout)
	defer cancel()
	for _, m := range [][]byte{[]byte(`{"event":"connected","protocol":"Call","version":"1.0.0"}`), start} {
		if err := b.agent.Write(ctx, websocket.MessageText, m); err != nil {
			b.log.Warn("media stream: the agent did not take start; ending the call", "stream", b.streamSid)
			return ReasonAgentClosed
		}
	}
	return ""
}

// relay runs the two readers and two writers until the first reason to
// end, then lets the queues drain briefly and closes both sides.
//
// Reads and writes carry no context (the websocket library would hook a
// callback on it for every frame): they end when relay closes the
// sockets, which it does last, after a hang-up too, so that the agent
// still gets its stop.
func (b *bridge) relay(ctx context.Context) string {
	ended := make(chan string, 2)
	finish := make(chan struct{})
	drained := [2]chan bool{make(chan bool, 1), make(chan bool, 1)}
	var wg sync.WaitGroup
	wg.Add(4)
	go func() { defer wg.Done(); ended <- b.readProvider() }()
	go func() { defer wg.Done(); ended <- b.readAgent() }()
	go func() { defer wg.Done(); drained[0] <- write(b.agent, b.toAgent, finish) }()
	go func() { defer wg.Done(); drained[1] <- write(b.provider, b.toProvider, finish) }()

	var reason string
	select {
	case reason = <-ended:
	case <-ctx.Done():
		reason = ReasonContext
	}
	drain, stopDraining := context.WithTimeout(context.Background(), drainTimeout)
	defer stopDraining()
	if reason != ReasonAgentClosed && reason != ReasonAgentMalformed {
		// The provider's own stop, or one of ours. stopMsg is readProvider's
		// until it has returned ReasonStop: after a hang-up it may still be
		// reading one.
		var stop []byte
		if reason == ReasonStop {
			stop = b.stopMsg
		} else {
			stop, _ = json.Marshal(Message{Event: EventStop, StreamSid: b.streamSid, Stop: &Stop{}})
		}
		select {
		case b.toAgent.out <- stop:
		case <-drain.Done():
		}
	}
	close(finish)
	// A side that failed is dropped; the other is closed cleanly if it
	// took all it was sent.
	failed := [2]bool{reason == ReasonAgentClosed || reason == ReasonAgentMalformed,
		reason == ReasonProviderClosed || reason == ReasonProviderMalformed}
	var closing sync.WaitGroup
	for i, c := range []*websocket.Conn{b.agent, b.provider} {
		ok := false
		select {
		case ok = <-drained[i]:
		case <-drain.Done():
		}
		ok = ok && !failed[i]
		closing.Add(1)
		go func() {
			defer closing.Done()
			if ok {
				_ = c.Close(websocket.StatusNormalClosure, "")
			} else {
				_ = c.CloseNow()
			}
		}()
	}
	closing.Wait()
	wg.Wait()
	return reason
}

// readProvider relays the provider's messages to the agent's queue, as
// they came.
func (b *bridge) readProvider() string {
	var audio []byte // decoded for the recording
	for {
		raw, f, reason := b.read(context.Background(), b.provider, "provider", b.toAgent.buffer())
		if reason != "" {
			return reason
		}
		switch f.event {
		case EventMedia:
			b.fromCaller++
			if b.rec != nil {
				ts, err := strconv.ParseInt(string(f.timestamp), 10, 64)
				if err != nil {
					ts = -1
				}
				audio, _ = base64.StdEncoding.AppendDecode(audio[:0], f.payload)
				b.rec.caller(ts, audio)
			}
		case EventDTMF:
			b.dtmf++
		case EventMark:
		case EventStop:
			b.stopMsg = raw
			return ReasonStop
		default:
			b.toAgent.recycle(raw)
			continue
		}
		b.toAgent.offer(raw)
	}
}

// readAgent relays the agent's media, mark and clear to the provider's
// queue, addressed to the provider's stream.
func (b *bridge) readAgent() string {
	var in, audio []byte
	for {
		var f frame
		var reason string
		in, f, reason = b.read(context.Background(), b.agent, "agent", in)
		if reason != "" {
			return reason
		}
		var out []byte
		switch f.event {
		case EventMedia:
			b.toCaller++
			if b.rec != nil {
				audio, _ = base64.StdEncoding.AppendDecode(audio[:0], f.payload)
				b.rec.agentAudio(audio)
			}
			out = append(append(append(b.toProvider.buffer(), b.mediaPrefix...), f.payload...), `"}}`...)
		case EventMark:
			out, _ = json.Marshal(Message{Event: EventMark, StreamSid: b.streamSid, Mark: f.full.Mark})
		case EventClear:
			if b.rec != nil {
				b.rec.clear()
			}
			b.toProvider.discard() // what the provider would drop anyway
			out = append(b.toProvider.buffer(), b.clearMsg...)
		default:
			continue
		}
		b.toProvider.offer(out)
	}
}

// read is one message from a side, read into buf (reused if big enough),
// and checked; reason is set when the side has ended (closed, malformed,
// oversized).
func (b *bridge) read(ctx context.Context, c *websocket.Conn, side string, buf []byte) ([]byte, frame, string) {
	closed, malformed := ReasonProviderClosed, ReasonProviderMalformed
	if side == "agent" {
		closed, malformed = ReasonAgentClosed, ReasonAgentMalformed
	}
	typ, data, err := readMessage(ctx, c, buf)
	switch {
	case errors.Is(err, websocket.ErrMessageTooBig):
		b.log.Warn("media stream: message over the limit; ending the call", "side", side, "limit_bytes", MaxMessageBytes, "stream", b.streamSid)
		return data, frame{}, malformed
	case err != nil:
		return data, frame{}, closed
	case typ != websocket.MessageText:
		b.log.Warn("media stream: binary message; ending the call", "side", side, "stream", b.streamSid)
		return data, frame{}, malformed
	}
	f, err := parseFrame(data)
	if err != nil {
		b.log.Warn("media stream: malformed message; ending the call", "side", side, "error", err.Error(), "stream", b.streamSid)
		return data, frame{}, malformed
	}
	return data, f, ""
}

// readMessage reads one message into buf[:0], grown as needed (the
// connection's read limit bounds it).
func readMessage(ctx context.Context, c *websocket.Conn, buf []byte) (websocket.MessageType, []byte, error) {
	typ, r, err := c.Reader(ctx)
	if err != nil {
		return 0, buf, err
	}
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, 512)
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return typ, buf, nil
		}
		if err != nil {
			return typ, buf, err
		}
	}
}

// write sends q's messages to c until finish, then what is left in q; it
// reports whether all went (false: c failed, and is closed).
func write(c *websocket.Conn, q *queue, finish <-chan struct{}) bool {
	send := func(m []byte) bool {
		if c.Write(context.Background(), websocket.MessageText, m) != nil {
			_ = c.CloseNow()
			return false
		}
		q.recycle(m)
		return true
	}
	for {
		select {
		case m := <-q.out:
			if !send(m) {
				return false
			}
		case <-finish:
			for {
				select {
				case m := <-q.out:
					if !send(m) {
						return false
					}
				default:
					return true
				}
			}
		}
	}
}
