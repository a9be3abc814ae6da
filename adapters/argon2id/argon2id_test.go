package argon2id

import (
	"runtime"
	"strings"
	"testing"
)

// cheap keeps the tests fast; the format and the logic are the same.
var cheap = Params{MemoryKiB: 1024, Time: 1, Threads: 1}

func TestHashAndVerify(t *testing.T) {
	h := New(cheap)
	a, err := h.Hash("correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := h.Hash("correct horse battery")
	if !strings.HasPrefix(a, "$argon2id$v=19$m=1024,t=1,p=1$") || a == b {
		t.Fatalf("hashes %q and %q: want the PHC format with a fresh salt each time", a, b)
	}
	if !h.Verify("correct horse battery", a) || !h.Verify("correct horse battery", b) {
		t.Fatal("the right password does not verify")
	}
	if h.Verify("correct horse batterY", a) || h.Verify("", a) {
		t.Fatal("a wrong password verifies")
	}
	// Hashes made with other parameters still verify: they carry their own.
	if !New(Params{MemoryKiB: 2048, Time: 2, Threads: 2}).Verify("correct horse battery", a) {
		t.Fatal("a hash with other parameters does not verify")
	}
}

func TestVerifyRefusesBrokenHashes(t *testing.T) {
	h := New(cheap)
	good, _ := h.Hash("pw-pw-pw-pw")
	parts := strings.Split(good, "$")
	for name, encoded := range map[string]string{
		"empty":         "",
		"bcrypt":        "$2a$10$abcdefghijklmnopqrstuvABCDEFGHIJKLMNOPQRSTUVWXYZ01234",
		"argon2i":       strings.Replace(good, "argon2id", "argon2i", 1),
		"other version": strings.Replace(good, "v=19", "v=16", 1),
		"bad salt":      strings.Join([]string{"", parts[1], parts[2], parts[3], "!!!", parts[5]}, "$"),
		"huge memory":   strings.Replace(good, "m=1024", "m=4194304", 1),
		"zero time":     strings.Replace(good, "t=1", "t=0", 1),
		"truncated":     good[:len(good)-30],
	} {
		if h.Verify("pw-pw-pw-pw", encoded) {
			t.Errorf("%s: verified", name)
		}
	}
}

// A missing account (no hash) must cost what a wrong password costs, so the
// answer's timing does not tell whether the account exists. Timing is not
// asserted in tests; the memory Argon2 fills is the work, and it is exact.
func TestVerifyWithoutAHashDoesTheSameWork(t *testing.T) {
	h := New(cheap)
	real, _ := h.Hash("pw-pw-pw-pw")
	allocated := func(encoded string) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		h.Verify("wrong password", encoded)
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	withHash, withoutHash := allocated(real), allocated("")
	if withHash < uint64(cheap.MemoryKiB)*1024 || withoutHash < uint64(cheap.MemoryKiB)*1024 {
		t.Fatalf("allocated %d bytes with a hash and %d without; want at least %d each", withHash, withoutHash, cheap.MemoryKiB*1024)
	}
}

// Making a hasher does no Argon2 work: the service makes one at start-up,
// and its peak memory would be Argon2's.
func TestNewFillsNoMemory(t *testing.T) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	New(DefaultParams)
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 64<<10 {
		t.Errorf("New allocated %d bytes", n)
	}
}

func BenchmarkVerify(b *testing.B) {
	h := New(DefaultParams)
	real, _ := h.Hash("pw-pw-pw-pw")
	b.Run("with a hash", func(b *testing.B) {
		for b.Loop() {
			h.Verify("wrong", real)
		}
	})
	b.Run("without a hash", func(b *testing.B) {
		for b.Loop() {
			h.Verify("wrong", "")
		}
	})
}
