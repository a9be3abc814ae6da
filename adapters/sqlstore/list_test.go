package sqlstore

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// TestListsReadAsJSONDecodesThem: a stored list read without decoding
// (plainList) is what decoding it gives, whatever it holds.
func TestListsReadAsJSONDecodesThem(t *testing.T) {
	decoded := func(s string) []string {
		var l []string
		_ = json.Unmarshal([]byte(s), &l)
		return l
	}
	inputs := []string{`[]`, `[""]`, `["a"]`, `["a","b"]`, `["a",""]`, `["","b"]`, `[ "a" ]`, `["a", "b"]`, `["a","b"`,
		`["]`, `["a"]x"]`, `["a\"b"]`, `["a\u0041"]`, "[\"a\tb\"]", "[\"\xff\"]", `["é","日本"]`, `["\ufffd"]`, `"a"`, `[1]`, ``}
	pieces := []string{"a", "b@example.com", `"`, `","`, `\`, `\"`, "\t", "é", "\xff", " ", ",", "[", "]", "<", "\ufffd"}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 5000 {
		items := make([]string, rng.IntN(4))
		for i := range items {
			var b strings.Builder
			for range rng.IntN(5) {
				b.WriteString(pieces[rng.IntN(len(pieces))])
			}
			items[i] = b.String()
		}
		marshalled := jsonList(items).text()
		if rng.IntN(3) == 0 { // and now and then not quite JSON
			marshalled = marshalled[:rng.IntN(len(marshalled)+1)] + pieces[rng.IntN(len(pieces))] + marshalled[rng.IntN(len(marshalled)+1):]
		}
		inputs = append(inputs, marshalled)
	}
	plain := 0
	for _, s := range inputs {
		want := decoded(s)
		if s == "[]" {
			want = []string{}
		}
		if got := parseList(s); !reflect.DeepEqual(got, want) {
			t.Fatalf("parseList(%q) = %q, decoding gives %q", s, got, want)
		}
		if _, ok := plainList(s); ok {
			plain++
		}
	}
	if plain < len(inputs)/20 {
		t.Fatalf("only %d of %d lists were read without decoding", plain, len(inputs))
	}
}
