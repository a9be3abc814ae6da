// Package mediastream relays a phone call's live audio between the
// telephony provider and a voice agent, both speaking Twilio's Media
// Streams WebSocket protocol (JSON text messages: connected, start, media
// with base64 8 kHz μ-law, dtmf, mark, stop; and media, mark, clear back),
// so an agent written for Twilio works unchanged.
//
// The pieces:
//   - Accept takes the provider's WebSocket (after the caller has checked
//     its signature); DialAgent opens the agent's, signing the upgrade the
//     way Callsign's webhooks are signed (VerifyAgentRequest checks it).
//   - Bridge relays both ways for the whole call. Each direction has a
//     bounded queue (about 1 s of audio): a side that stops reading loses
//     frames (counted), memory never grows; a message over 16 KB or
//     malformed ends the call with a log line; the provider's stop ends
//     both sides. Each call has its own goroutines and no shared lock.
//     A media frame is relayed without allocating: its JSON is checked
//     by a scanner of the media shape (the payload's base64 decoded only
//     to record it), into buffers each direction reuses.
//   - Recorder keeps both directions as one stereo WAV (caller left,
//     agent right), streamed to a file, bounded in duration.
//   - PlayProvider plays the provider's side (the simulator).
package mediastream

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Event names of the Media Streams protocol.
const (
	EventConnected = "connected"
	EventStart     = "start"
	EventMedia     = "media"
	EventDTMF      = "dtmf"
	EventMark      = "mark"
	EventStop      = "stop"
	EventClear     = "clear"
)

// Message is one Media Streams message, either way. Only the part its
// Event names is set.
type Message struct {
	Event          string `json:"event"`
	SequenceNumber string `json:"sequenceNumber,omitempty"`
	StreamSid      string `json:"streamSid,omitempty"`
	Protocol       string `json:"protocol,omitempty"` // connected
	Version        string `json:"version,omitempty"`  // connected
	Start          *Start `json:"start,omitempty"`
	Media          *Media `json:"media,omitempty"`
	DTMF           *DTMF  `json:"dtmf,omitempty"`
	Mark           *Mark  `json:"mark,omitempty"`
	Stop           *Stop  `json:"stop,omitempty"`
}

// Start describes the stream; sent once, after connected.
type Start struct {
	AccountSid       string            `json:"accountSid,omitempty"`
	StreamSid        string            `json:"streamSid"`
	CallSid          string            `json:"callSid"`
	Tracks           []string          `json:"tracks"`
	CustomParameters map[string]string `json:"customParameters"`
	MediaFormat      MediaFormat       `json:"mediaFormat"`
}

// MediaFormat is always 8 kHz mono μ-law on a phone call.
type MediaFormat struct {
	Encoding   string `json:"encoding"`
	SampleRate int    `json:"sampleRate"`
	Channels   int    `json:"channels"`
}

// PhoneFormat is the format of every Media Streams call.
var PhoneFormat = MediaFormat{Encoding: "audio/x-mulaw", SampleRate: 8000, Channels: 1}

// Media is one chunk of audio. From the provider it carries the track,
// chunk number and timestamp (ms since the stream started); from the agent
// only the payload.
type Media struct {
	Track     string `json:"track,omitempty"`
	Chunk     string `json:"chunk,omitempty"`
	Timestamp string `json:"timestamp,omitempty"`
	Payload   string `json:"payload"` // base64 μ-law
}

// DTMF is a key the caller pressed.
type DTMF struct {
	Track string `json:"track,omitempty"`
	Digit string `json:"digit"`
}

// Mark names a point in the agent's audio; the provider echoes it when
// the audio before it has played.
type Mark struct {
	Name string `json:"name"`
}

// Stop ends the stream.
type Stop struct {
	AccountSid string `json:"accountSid,omitempty"`
	CallSid    string `json:"callSid,omitempty"`
}

// ParseMessage decodes one message and checks that the part its event
// needs is there. Unknown events are returned as they are (the bridge
// ignores them, as Twilio does).
func ParseMessage(data []byte) (Message, error) {
	var m Message
	if err := json.Unmarshal(data, &m); err != nil {
		return Message{}, fmt.Errorf("not JSON: %w", err)
	}
	var missing bool
	switch m.Event {
	case "":
		return Message{}, errors.New("no event")
	case EventStart:
		missing = m.Start == nil
	case EventMedia:
		missing = m.Media == nil
	case EventDTMF:
		missing = m.DTMF == nil || m.DTMF.Digit == ""
	case EventMark:
		missing = m.Mark == nil
	}
	if missing {
		return Message{}, fmt.Errorf("%s message without its %s object", m.Event, m.Event)
	}
	return m, nil
}

// frame is what the bridge needs of a message: its event, and a media
// frame's payload (base64, checked) and timestamp as sent.
type frame struct {
	event              string
	payload, timestamp []byte
	full               Message // the whole message, unless scanMedia read it
}

// parseFrame reads a message for the bridge: a media frame in the usual
// shape through scanMedia, 100 times a second a call, without allocating;
// anything else through ParseMessage. A media payload must be base64.
func parseFrame(data []byte) (frame, error) {
	f, ok := scanMedia(data)
	if !ok {
		m, err := ParseMessage(data)
		if err != nil {
			return frame{}, err
		}
		f = frame{event: m.Event, full: m}
		if m.Media != nil {
			f.payload, f.timestamp = []byte(m.Media.Payload), []byte(m.Media.Timestamp)
		}
	}
	if f.event == EventMedia && !validBase64(f.payload) {
		return frame{}, errors.New("media payload is not base64")
	}
	return f, nil
}

// scanMedia reads a media message the quick way: an object of strings
// without escapes (event, sequenceNumber, streamSid) and a media object
// likewise (track, chunk, timestamp, payload), in any order and spacing,
// as Twilio and agents send it. It reports false for anything else (other
// events, other fields, escapes, numbers, malformed JSON), for
// ParseMessage to read in full, so it never takes a message that
// ParseMessage would refuse or read otherwise.
func scanMedia(data []byte) (f frame, ok bool) {
	s := scanner{data: data}
	var event []byte
	var media bool
	ok = s.object(func(key []byte) bool {
		switch string(key) {
		case "event":
			event, ok = s.str()
		case "sequenceNumber", "streamSid":
			_, ok = s.str()
		case "media":
			media = true
			return s.object(func(key []byte) bool {
				switch string(key) {
				case "payload":
					f.payload, ok = s.str()
				case "timestamp":
					f.timestamp, ok = s.str()
				case "track", "chunk":
					_, ok = s.str()
				default:
					return false
				}
				return ok
			})
		default:
			return false
		}
		return ok
	})
	s.space()
	if !ok || !media || string(event) != EventMedia || s.i != len(data) {
		return frame{}, false
	}
	f.event = EventMedia
	return f, true
}

// scanner reads JSON of the one shape scanMedia takes.
type scanner struct {
	data []byte
	i    int
}

func (s *scanner) space() {
	for s.i < len(s.data) && (s.data[s.i] == ' ' || s.data[s.i] == '\t' || s.data[s.i] == '\n' || s.data[s.i] == '\r') {
		s.i++
	}
}

// take consumes c, after spaces.
func (s *scanner) take(c byte) bool {
	s.space()
	if s.i < len(s.data) && s.data[s.i] == c {
		s.i++
		return true
	}
	return false
}

// str is a string without escapes or control characters: its contents.
func (s *scanner) str() ([]byte, bool) {
	if !s.take('"') {
		return nil, false
	}
	for start := s.i; s.i < len(s.data); s.i++ {
		switch c := s.data[s.i]; {
		case c == '"':
			s.i++
			return s.data[start : s.i-1], true
		case c == '\\' || c < 0x20:
			return nil, false
		}
	}
	return nil, false
}

// object reads a non-empty object, member reading each key's value.
func (s *scanner) object(member func(key []byte) bool) bool {
	if !s.take('{') {
		return false
	}
	for {
		key, ok := s.str()
		if !ok || !s.take(':') || !member(key) {
			return false
		}
		if s.take('}') {
			return true
		}
		if !s.take(',') {
			return false
		}
	}
}

// base64Alphabet marks the characters of standard base64.
var base64Alphabet = func() (t [256]bool) {
	for _, c := range []byte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/") {
		t[c] = true
	}
	return t
}()

// validBase64 reports whether p is padded standard base64, checked
// without decoding: the bridge decodes only what it records.
func validBase64(p []byte) bool {
	if len(p)%4 != 0 {
		return false
	}
	n := len(p)
	for i := 0; i < 2 && n > 0 && p[n-1] == '='; i++ {
		n--
	}
	for _, c := range p[:n] {
		if !base64Alphabet[c] {
			return false
		}
	}
	return true
}
