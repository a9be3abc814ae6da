package mailmime

import (
	"bytes"
	"errors"
)

// decodeQuotedPrintable decodes body exactly as mime/quotedprintable's
// Reader over a default bufio.Reader does, the same bytes and an error for
// the same input (TestQuotedPrintableAsTheStandardLibrary), in one pass
// into one buffer of body's size (decoded text is never longer): the
// Reader went through its line a byte at a time, and was the largest part
// of parsing ordinary mail after enmime.
func decodeQuotedPrintable(body []byte) ([]byte, error) {
	out := make([]byte, 0, len(body))
	for len(body) > 0 {
		line := body
		if i := bytes.IndexByte(body, '\n'); i >= 0 {
			line = body[:i+1]
		}
		body = body[len(line):]
		hasLF := line[len(line)-1] == '\n'
		// bufio's 4 KiB buffer cannot hold a longer line, and the Reader fails.
		if len(line) > qpMaxLine || len(line) == qpMaxLine && !hasLF {
			return nil, errQPLongLine
		}
		text := bytes.TrimRight(line, " \t\r\n")
		var lineEnd string
		switch {
		case len(text) > 0 && text[len(text)-1] == '=': // a soft line break
			rest := bytes.TrimLeft(line[len(text):], " \t")
			text = text[:len(text)-1]
			// "=" ends the body only after something.
			if !bytes.HasPrefix(rest, []byte("\n")) && !bytes.HasPrefix(rest, []byte("\r\n")) && !(len(rest) == 0 && len(text) > 0 && !hasLF) {
				return nil, errQPSoftBreak
			}
		case hasLF && len(line) >= 2 && line[len(line)-2] == '\r':
			lineEnd = "\r\n"
		case hasLF:
			lineEnd = "\n"
		}
		for len(text) > 0 {
			// The run up to the next "=" is copied as it is, once checked.
			run := text
			if eq := bytes.IndexByte(text, '='); eq >= 0 {
				run = text[:eq]
			}
			for _, b := range run {
				if qpInvalid[b] {
					return nil, errQPByte
				}
			}
			out = append(out, run...)
			text = text[len(run):]
			switch {
			case len(text) == 0:
			case len(text) >= 3 && isHex(text[1]) && isHex(text[2]):
				out = append(out, unhex(text[1])<<4|unhex(text[2]))
				text = text[3:]
			case len(text) == 1 || text[1] == '\r':
				return nil, errQPEscape // "=" before the line's end
			default: // a literal "=", as the Reader takes it
				out = append(out, '=')
				text = text[1:]
			}
		}
		out = append(out, lineEnd...)
	}
	return out, nil
}

// qpInvalid marks the bytes the Reader refuses unescaped: controls other
// than tab and carriage return, and DEL.
var qpInvalid = func() (t [256]bool) {
	for b := range 256 {
		t[b] = b < ' ' && b != '\t' && b != '\r' || b == 0x7f
	}
	return t
}()

// qpMaxLine is the size of bufio.Reader's default buffer.
const qpMaxLine = 4096

var (
	errQPLongLine  = errors.New("quotedprintable: line longer than 4 KiB")
	errQPSoftBreak = errors.New("quotedprintable: invalid bytes after =")
	errQPEscape    = errors.New("quotedprintable: = at the end of a line")
	errQPByte      = errors.New("quotedprintable: invalid unescaped byte")
)

// isHex reports whether b is a hexadecimal digit, in either case.
func isHex(b byte) bool { return b >= '0' && b <= '9' || b >= 'A' && b <= 'F' || b >= 'a' && b <= 'f' }

func unhex(b byte) byte {
	switch {
	case b >= 'a':
		return b - 'a' + 10
	case b >= 'A':
		return b - 'A' + 10
	}
	return b - '0'
}
