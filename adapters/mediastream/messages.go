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
