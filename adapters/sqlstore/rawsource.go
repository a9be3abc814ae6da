package sqlstore

import (
	"fmt"
	"sync"

	"github.com/klauspost/compress/s2"
)

// storedSource is a message's source as email_sources keeps it.
type storedSource struct {
	raw        []byte
	compressed bool // raw is an S2 block of the source
}

// storedSourceOf is the form a source is kept in. SQLite keeps it
// compressed when that saves a tenth or more: most of a message on disk is
// its source, and each page of it is written twice, to the log and at the
// checkpoint. S2 compresses at 0.5–1 GB/s here, on the session's goroutine
// before the message joins the group commit, so the writer only sees fewer
// pages. PostgreSQL's TOAST compresses sources itself (lz4, migration
// 00027).
func (db *DB) storedSourceOf(raw []byte) storedSource {
	if db.dialect != SQLite || len(raw) > maxCompressedSource {
		return storedSource{raw: raw}
	}
	buf := encodeBuffers.Get().(*[]byte)
	defer encodeBuffers.Put(buf)
	c := s2.Encode(*buf, raw)
	if cap(c) <= maxPooledEncodeBuffer {
		*buf = c[:cap(c)]
	}
	if len(c) > len(raw)-len(raw)/10 {
		return storedSource{raw: raw} // not worth a decoding at every read
	}
	return storedSource{raw: append([]byte(nil), c...), compressed: true}
}

// maxCompressedSource bounds the sources compressed: S2 has no entropy
// coding, so what makes a message large (attachments, base64 of already
// compressed files) hardly shrinks, and the encoder's buffer would be
// another copy of it.
const maxCompressedSource = 1 << 20

// encodeBuffers hold room for a message's worst case (a little more than
// the message), which is garbage once the compressed form is copied out;
// those of messages up to maxPooledEncodeBuffer are used again.
var encodeBuffers = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledEncodeBuffer = 256 << 10

// rawRow is a message's source as read back: with message_id where a query
// reads several.
type rawRow struct {
	MessageID  int64  `db:"message_id"`
	Raw        []byte `db:"raw"`
	Compressed bool   `db:"compressed"`
}

// source is the message's source as it was received or sent.
func (r rawRow) source() ([]byte, error) {
	if !r.Compressed {
		return r.Raw, nil
	}
	raw, err := s2.Decode(nil, r.Raw)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: decompressing message %d's source: %w", r.MessageID, err)
	}
	return raw, nil
}
