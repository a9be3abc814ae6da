package mediastream

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"sync"
	"time"
)

const (
	sampleRate   = 8000
	frameSamples = sampleRate / 50 // a 20 ms frame
	wavHeader    = 44
	// DefaultRecordingLimit is the longest recording kept: 4 h, about
	// 460 MB of stereo 16-bit PCM.
	DefaultRecordingLimit = 4 * time.Hour
	// maxAgentLead bounds the agent's audio held ahead of the caller's
	// clock (an agent may send speech faster than it plays): 20 s, 160 KB.
	maxAgentLead = 20 * sampleRate
	// maxWAVSamples keeps the RIFF sizes within 32 bits.
	maxWAVSamples = (1<<32 - 1 - wavHeader) / 4
)

// Recorder writes both directions of a call as one WAV file: 16-bit PCM,
// 8 kHz, stereo, the caller left and the agent right. The caller's frames
// are placed by their timestamps (a gap is silence); the agent's audio
// plays from when it arrives, or after the agent audio before it, as the
// provider plays it, and a clear drops what has not played yet. Audio is
// streamed to the writer as the caller's clock advances; only the agent's
// lead is held, at most 20 s. Safe for the bridge's two readers.
type Recorder struct {
	mu      sync.Mutex
	w       io.WriteSeeker
	bw      *bufio.Writer
	limit   int64  // samples per channel
	written int64  // stereo samples written: the caller's clock
	agent   []byte // the agent's μ-law from written on
	err     error
	sample  [4]byte // emit's, here so that it is not allocated per frame
}

// NewRecorder starts a recording on w (an *os.File, typically); limit is
// the longest kept (0 means DefaultRecordingLimit), audio past it is not
// written. Close completes the file.
func NewRecorder(w io.WriteSeeker, limit time.Duration) (*Recorder, error) {
	if limit <= 0 {
		limit = DefaultRecordingLimit
	}
	r := &Recorder{w: w, bw: bufio.NewWriterSize(w, 32<<10), limit: min(int64(limit.Seconds()*sampleRate), maxWAVSamples)}
	if _, err := r.bw.Write(wavHeaderFor(0)); err != nil {
		return nil, err
	}
	return r, nil
}

// Bytes is the size of the file so far.
func (r *Recorder) Bytes() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return wavHeader + 4*r.written
}

// Close writes the agent audio still held and fixes the header's sizes. It
// does not close the writer.
func (r *Recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.emit(int64(len(r.agent)), nil)
	if r.err == nil {
		r.err = r.bw.Flush()
	}
	if r.err != nil {
		return r.err
	}
	if _, err := r.w.Seek(0, io.SeekStart); err != nil {
		return err
	}
	if _, err := r.w.Write(wavHeaderFor(r.written)); err != nil {
		return err
	}
	_, err := r.w.Seek(0, io.SeekEnd)
	return err
}

// caller records one frame from the caller; timestampMS < 0 means "right
// after the previous frame".
func (r *Recorder) caller(timestampMS int64, audio []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if at := timestampMS * sampleRate / 1000; at > r.written {
		r.emit(at-r.written, nil)
	}
	r.emit(int64(len(audio)), audio)
}

// agentAudio queues the agent's audio after what it sent before.
func (r *Recorder) agentAudio(audio []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	room := max(0, min(maxAgentLead, r.limit-r.written)-len64(r.agent))
	r.agent = append(r.agent, audio[:min(len64(audio), room)]...)
}

// clear drops the agent's audio that has not played.
func (r *Recorder) clear() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.agent = r.agent[:0]
}

// emit writes n stereo samples: left from caller (silence when nil), right
// from the agent's held audio (silence past it).
func (r *Recorder) emit(n int64, caller []byte) {
	n = min(n, r.limit-r.written)
	if n <= 0 || r.err != nil {
		return
	}
	sample := r.sample[:]
	for i := range n {
		left, right := byte(silence), byte(silence)
		if caller != nil {
			left = caller[i]
		}
		if i < len64(r.agent) {
			right = r.agent[i]
		}
		binary.LittleEndian.PutUint16(sample[0:], uint16(MulawToPCM(left)))
		binary.LittleEndian.PutUint16(sample[2:], uint16(MulawToPCM(right)))
		if _, err := r.bw.Write(sample); err != nil {
			r.err = errors.Join(errors.New("recording"), err)
			return
		}
	}
	r.agent = r.agent[:copy(r.agent, r.agent[min(n, len64(r.agent)):])]
	r.written += n
}

func len64(b []byte) int64 { return int64(len(b)) }

// wavHeaderFor is the RIFF/WAVE header of samples stereo 16-bit samples.
func wavHeaderFor(samples int64) []byte {
	data := uint32(samples * 4)
	h := make([]byte, 0, wavHeader)
	h = append(h, "RIFF"...)
	h = binary.LittleEndian.AppendUint32(h, 36+data)
	h = append(h, "WAVEfmt "...)
	h = binary.LittleEndian.AppendUint32(h, 16)           // fmt chunk size
	h = binary.LittleEndian.AppendUint16(h, 1)            // PCM
	h = binary.LittleEndian.AppendUint16(h, 2)            // channels
	h = binary.LittleEndian.AppendUint32(h, sampleRate)   // sample rate
	h = binary.LittleEndian.AppendUint32(h, sampleRate*4) // byte rate
	h = binary.LittleEndian.AppendUint16(h, 4)            // block align
	h = binary.LittleEndian.AppendUint16(h, 16)           // bits per sample
	h = append(h, "data"...)
	return binary.LittleEndian.AppendUint32(h, data)
}
