package core

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func TestCRLFReader(t *testing.T) {
	for in, want := range map[string]string{
		"":                                  "",
		"Subject: a\n\nbody\n":              "Subject: a\r\n\r\nbody\r\n",
		"Subject: a\r\n\r\nbody\r\n":        "Subject: a\r\n\r\nbody\r\n", // already CRLF: unchanged
		"mixed\r\nbare\n\nend":              "mixed\r\nbare\r\n\r\nend",
		"\n\n\n":                            "\r\n\r\n\r\n",
		"a lone\rCR stays\r":                "a lone\rCR stays\r",
		"\r\r\n\xff\x00\n":                  "\r\r\n\xff\x00\r\n",
		strings.Repeat("line\n", 10000):     strings.Repeat("line\r\n", 10000),
		strings.Repeat("x\r", 5000) + "\n!": strings.Repeat("x\r", 5000) + "\n!",
	} {
		readers := map[string]io.Reader{
			"whole":    NewCRLFReader(strings.NewReader(in)),
			"one byte": NewCRLFReader(iotest.OneByteReader(strings.NewReader(in))),
			"half":     NewCRLFReader(iotest.HalfReader(strings.NewReader(in))),
		}
		for name, r := range readers {
			got, err := io.ReadAll(r)
			if err != nil || string(got) != want {
				t.Errorf("%s %.40q: read %.60q, %v; want %.60q", name, in, got, err, want)
			}
		}
		// Reads into buffers of one and two bytes (a '\r' owed across reads).
		for _, size := range []int{1, 2, 3} {
			var out bytes.Buffer
			r, buf := NewCRLFReader(strings.NewReader(in)), make([]byte, size)
			for {
				n, err := r.Read(buf)
				out.Write(buf[:n])
				if err != nil {
					break
				}
			}
			if out.String() != want {
				t.Errorf("%d-byte reads of %.40q: %.60q", size, in, out.String())
			}
		}
		if err := iotest.TestReader(NewCRLFReader(strings.NewReader(in)), []byte(want)); err != nil {
			t.Errorf("%.40q: %v", in, err)
		}
	}
}

func BenchmarkCRLFReader(b *testing.B) {
	for name, line := range map[string]string{"crlf": strings.Repeat("x", 70) + "\r\n", "bare-lf": strings.Repeat("x", 70) + "\n"} {
		in := []byte(strings.Repeat(line, 10<<20/len(line))) // 10 MB
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			for i := 0; i < b.N; i++ {
				if _, err := io.Copy(io.Discard, NewCRLFReader(bytes.NewReader(in))); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
