package mailmime

import (
	"bytes"
	"errors"
	"io"

	"github.com/emersion/go-message"

	"github.com/callsign/callsign/core"
)

// tooManyParts refuses, before the MIME tree is built, a message with more
// than core.MaxMessageParts parts: building it costs memory per part (a
// 10 MB message of 100,000 one-byte attachments grew the process by
// 600 MB), so the count must come first. Most mail has far fewer
// delimiter lines than the limit and is not walked at all; otherwise
// go-message walks the structure streaming, one part header at a time.
func tooManyParts(raw []byte) error {
	if bytes.Count(raw, []byte("\n--")) <= core.MaxMessageParts {
		return nil
	}
	n, err := countParts(raw, core.MaxMessageParts)
	if errors.Is(err, errTooDeep) {
		return nil // readParts' own budget reads it as text instead (errTooComplex)
	}
	// A structure go-message cannot walk that has so many delimiter-like
	// lines is refused too: enmime would build a part per delimiter.
	if n > core.MaxMessageParts || err != nil && !errors.Is(err, io.EOF) {
		return core.TooLarge("The message has more than %d MIME parts.", core.MaxMessageParts)
	}
	return nil
}

var errTooDeep = errors.New("multipart nesting deeper than the parser reads")

// countParts counts the entities of raw (the message and every part at any
// depth), stopping once past limit.
func countParts(raw []byte, limit int) (int, error) {
	e, err := message.Read(bytes.NewReader(raw))
	if e == nil {
		return 0, err
	}
	n := 0
	var walk func(e *message.Entity, depth int) error
	walk = func(e *message.Entity, depth int) error {
		if depth > maxDepth {
			return errTooDeep
		}
		if n++; n > limit {
			return nil
		}
		mr := e.MultipartReader()
		if mr == nil {
			return nil
		}
		for n <= limit {
			p, err := mr.NextPart()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil && !message.IsUnknownCharset(err) && !message.IsUnknownEncoding(err) {
				return err
			}
			if p == nil {
				return err
			}
			if err := walk(p, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return n, walk(e, 0)
}
