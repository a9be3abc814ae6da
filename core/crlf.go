package core

import (
	"bytes"
	"io"
)

// NewCRLFReader reads r with every bare LF (a line feed not after a carriage
// return) made CRLF, the line end RFC 5322 requires, and every other byte
// as it is. Inbound mail is normalised so at receipt, as Postfix does, so
// that the stored source, the parser and DKIM verification all read the
// same bytes. It streams: memory stays at one byte of state, whatever the
// message's size.
func NewCRLFReader(r io.Reader) io.Reader { return &crlfReader{r: r} }

type crlfReader struct {
	r       io.Reader
	afterCR bool // the last byte passed on was '\r'
	pending bool // an '\n' is owed after a '\r' that filled the last read
}

func (c *crlfReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n := 0
	if c.pending {
		p[0], n, c.pending, c.afterCR = '\n', 1, false, false
	}
	// Read into the second half at most, so that each '\n' has room to
	// gain its '\r' in front.
	room := (len(p) - n) / 2
	if room == 0 {
		if n > 0 {
			return n, nil
		}
		room = 1 // a one-byte buffer: a bare '\n' becomes "\r" now, "\n" next
	}
	buf := p[len(p)-room:]
	m, err := c.r.Read(buf)
	in := buf[:m]
	for len(in) > 0 {
		// Up to the next '\n' the bytes move as they are (copy may overlap).
		i := bytes.IndexByte(in, '\n')
		if i < 0 {
			i = len(in)
		}
		if i > 0 {
			c.afterCR = in[i-1] == '\r'
			n += copy(p[n:], in[:i])
			in = in[i:]
			continue
		}
		if !c.afterCR {
			p[n] = '\r'
			n++
			if n == len(p) { // a one-byte buffer
				c.pending = true
				return n, err
			}
		}
		p[n], c.afterCR = '\n', false
		n++
		in = in[1:]
	}
	return n, err
}
