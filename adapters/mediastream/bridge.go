package mediastream

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
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

	toAgent, toProvider chan []byte

	mediaPrefix, clearMsg []byte // messages to the provider, with its streamSid
	streamSid             string

	fromCaller, dtmf, droppedToAgent int64 // readProvider's
	toCaller, droppedToProvider      int64 // readAgent's
	stopMsg                          []byte
}

// Bridge relays a call between the provider and the agent until the
// provider's stop, either side's end, or ctx's end, and closes both
// connections. The agent receives connected and a start of its own (with
// opts.CustomParameters), then the provider's media, dtmf, mark and stop
// as sent; the provider receives the agent's media, mark and clear.
func Bridge(ctx context.Context, provider, agent *websocket.Conn, opts BridgeOptions) Stats {
	b := &bridge{provider: provider, agent: agent, rec: opts.Recorder, log: opts.Log,
		toAgent: make(chan []byte, queueFrames), toProvider: make(chan []byte, queueFrames)}
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
	stats.FramesDropped = b.droppedToAgent + b.droppedToProvider
	b.log.Info("media stream ended", "reason", stats.Reason, "stream", b.streamSid, "frames_from_caller", stats.FramesFromCaller,
		"frames_to_caller", stats.FramesToCaller, "frames_dropped", stats.FramesDropped, "dtmf", stats.DTMF)
	return stats
}

// awaitStart reads the provider's connected and start.
func (b *bridge) awaitStart(ctx context.Context) (*Start, string) {
	for {
		m, _, reason := b.read(ctx, b.provider, "provider")
		switch {
		case reason != "":
			return nil, reason
		case m.Event == EventConnected:
		case m.Event == EventStart:
			b.streamSid = cmp.Or(m.Start.StreamSid, m.StreamSid)
			sid, _ := json.Marshal(b.streamSid)
			b.mediaPrefix = []byte(`{"event":"media","streamSid":` + string(sid) + `,"media":{"payload":"`)
			b.clearMsg = []byte(`{"event":"clear","streamSid":` + string(sid) + `}`)
			return m.Start, ""
		default:
			b.log.Warn("media stream: provider sent before start; ending the call", "event", m.Event)
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
func (b *bridge) relay(ctx context.Context) string {
	// The sockets' own context outlives ctx, so that a hang-up still
	// sends the agent its stop and closes both sides cleanly.
	sockets, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	ended := make(chan string, 2)
	finish := make(chan struct{})
	drained := [2]chan bool{make(chan bool, 1), make(chan bool, 1)}
	var wg sync.WaitGroup
	wg.Add(4)
	go func() { defer wg.Done(); ended <- b.readProvider(sockets) }()
	go func() { defer wg.Done(); ended <- b.readAgent(sockets) }()
	go func() { defer wg.Done(); drained[0] <- write(sockets, b.agent, b.toAgent, finish) }()
	go func() { defer wg.Done(); drained[1] <- write(sockets, b.provider, b.toProvider, finish) }()

	var reason string
	select {
	case reason = <-ended:
	case <-ctx.Done():
		reason = ReasonContext
	}
	drain, stopDraining := context.WithTimeout(context.Background(), drainTimeout)
	defer stopDraining()
	if reason != ReasonAgentClosed && reason != ReasonAgentMalformed {
		stop := b.stopMsg // the provider's own, or one of ours
		if stop == nil {
			stop, _ = json.Marshal(Message{Event: EventStop, StreamSid: b.streamSid, Stop: &Stop{}})
		}
		select {
		case b.toAgent <- stop:
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
	cancel()
	wg.Wait()
	return reason
}

// readProvider relays the provider's messages to the agent's queue.
func (b *bridge) readProvider(ctx context.Context) string {
	for {
		m, raw, reason := b.read(ctx, b.provider, "provider")
		if reason != "" {
			return reason
		}
		switch m.Event {
		case EventMedia:
			b.fromCaller++
			if b.rec != nil {
				ts, err := strconv.ParseInt(m.Media.Timestamp, 10, 64)
				if err != nil {
					ts = -1
				}
				b.rec.caller(ts, m.Media.audio)
			}
		case EventDTMF:
			b.dtmf++
		case EventMark:
		case EventStop:
			b.stopMsg = raw
			return ReasonStop
		default:
			continue
		}
		offer(b.toAgent, raw, &b.droppedToAgent)
	}
}

// readAgent relays the agent's media, mark and clear to the provider's
// queue, addressed to the provider's stream.
func (b *bridge) readAgent(ctx context.Context) string {
	for {
		m, _, reason := b.read(ctx, b.agent, "agent")
		if reason != "" {
			return reason
		}
		var out []byte
		switch m.Event {
		case EventMedia:
			b.toCaller++
			if b.rec != nil {
				b.rec.agentAudio(m.Media.audio)
			}
			out = append(append(append(make([]byte, 0, len(b.mediaPrefix)+len(m.Media.Payload)+3), b.mediaPrefix...), m.Media.Payload...), `"}}`...)
		case EventMark:
			out, _ = json.Marshal(Message{Event: EventMark, StreamSid: b.streamSid, Mark: m.Mark})
		case EventClear:
			if b.rec != nil {
				b.rec.clear()
			}
			discard(b.toProvider) // what the provider would drop anyway
			out = b.clearMsg
		default:
			continue
		}
		offer(b.toProvider, out, &b.droppedToProvider)
	}
}

// read is one message from a side, checked; reason is set when the side
// has ended (closed, malformed, oversized).
func (b *bridge) read(ctx context.Context, c *websocket.Conn, side string) (parsed, []byte, string) {
	closed, malformed := ReasonProviderClosed, ReasonProviderMalformed
	if side == "agent" {
		closed, malformed = ReasonAgentClosed, ReasonAgentMalformed
	}
	typ, data, err := c.Read(ctx)
	switch {
	case errors.Is(err, websocket.ErrMessageTooBig):
		b.log.Warn("media stream: message over the limit; ending the call", "side", side, "limit_bytes", MaxMessageBytes, "stream", b.streamSid)
		return parsed{}, nil, malformed
	case err != nil:
		return parsed{}, nil, closed
	case typ != websocket.MessageText:
		b.log.Warn("media stream: binary message; ending the call", "side", side, "stream", b.streamSid)
		return parsed{}, nil, malformed
	}
	m, err := parse(data)
	if err != nil {
		b.log.Warn("media stream: malformed message; ending the call", "side", side, "error", err.Error(), "stream", b.streamSid)
		return parsed{}, nil, malformed
	}
	return m, data, ""
}

// parsed is a message with its media decoded.
type parsed struct {
	Message
	Media *decodedMedia
}

type decodedMedia struct {
	Media
	audio []byte
}

func parse(data []byte) (parsed, error) {
	m, err := ParseMessage(data)
	if err != nil {
		return parsed{}, err
	}
	p := parsed{Message: m}
	if m.Media != nil {
		audio, err := base64.StdEncoding.DecodeString(m.Media.Payload)
		if err != nil {
			return parsed{}, errors.New("media payload is not base64")
		}
		p.Media = &decodedMedia{Media: *m.Media, audio: audio}
	}
	return p, nil
}

// offer queues m unless the queue is full: then m is dropped and counted,
// so a side that stops reading never holds up the other.
func offer(q chan<- []byte, m []byte, dropped *int64) {
	select {
	case q <- m:
	default:
		*dropped++
	}
}

// discard empties a queue.
func discard(q chan []byte) {
	for {
		select {
		case <-q:
		default:
			return
		}
	}
}

// write sends q's messages to c until finish, then what is left in q; it
// reports whether all went (false: c failed, and is closed).
func write(ctx context.Context, c *websocket.Conn, q <-chan []byte, finish <-chan struct{}) bool {
	for {
		select {
		case m := <-q:
			if c.Write(ctx, websocket.MessageText, m) != nil {
				_ = c.CloseNow()
				return false
			}
		case <-finish:
			for {
				select {
				case m := <-q:
					if c.Write(ctx, websocket.MessageText, m) != nil {
						_ = c.CloseNow()
						return false
					}
				default:
					return true
				}
			}
		}
	}
}
