package vaultcipher

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func mustKey(t *testing.T) []byte {
	k, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestSealOpen(t *testing.T) {
	kr, err := FromKeys(mustKey(t))
	if err != nil {
		t.Fatal(err)
	}
	aad := []byte("secrets:value:1")
	a, err := kr.Seal([]byte("hunter2"), aad)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := kr.Seal([]byte("hunter2"), aad)
	if bytes.Equal(a, b) || bytes.Contains(a, []byte("hunter2")) {
		t.Fatal("sealing must use a fresh nonce and hide the plaintext")
	}
	if got, err := kr.Open(a, aad); err != nil || string(got) != "hunter2" {
		t.Fatalf("open: %q %v", got, err)
	}
	if _, err := kr.Open(a, []byte("secrets:value:2")); err == nil {
		t.Fatal("a value moved to another row opened")
	}
	tampered := append([]byte(nil), a...)
	tampered[len(tampered)-1] ^= 1
	if _, err := kr.Open(tampered, aad); err == nil {
		t.Fatal("a tampered value opened")
	}
	if _, err := kr.Open([]byte("short"), aad); err == nil {
		t.Fatal("garbage opened")
	}
	if !kr.Current(a) {
		t.Fatal("a fresh value is not under the current key")
	}
}

func TestPreviousKeysOpenButDoNotSeal(t *testing.T) {
	oldKey, newKey := mustKey(t), mustKey(t)
	old, _ := FromKeys(oldKey)
	sealedOld, _ := old.Seal([]byte("v"), nil)
	rotating, err := FromKeys(newKey, oldKey)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := rotating.Open(sealedOld, nil); err != nil || string(got) != "v" {
		t.Fatalf("previous key: %q %v", got, err)
	}
	if rotating.Current(sealedOld) {
		t.Fatal("a value under the previous key counts as current")
	}
	fresh, _ := rotating.Seal([]byte("v"), nil)
	if !rotating.Current(fresh) {
		t.Fatal("new values must be sealed under the current key")
	}
	newOnly, _ := FromKeys(newKey)
	if _, err := newOnly.Open(sealedOld, nil); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("retired key: %v", err)
	}
	if _, err := FromKeys([]byte("short")); err == nil {
		t.Fatal("a short key was accepted")
	}
}

func TestKeyFileIsCreatedPrivateAndReloaded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data", "vault.key")
	server, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v %v", st.Mode(), err)
	}
	before, _ := server.Seal([]byte("v"), nil)
	again, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := again.Open(before, nil); err != nil || string(got) != "v" {
		t.Fatal("the key file was not reused")
	}

	// A rotation prepends a key; the running keyring opens values sealed under
	// it at once (unknown id forces a reload) and seals under it after the interval.
	keys, _ := ReadKeyFile(path)
	next := mustKey(t)
	if err := WriteKeyFile(path, append([][]byte{next}, keys...)); err != nil {
		t.Fatal(err)
	}
	cli, _ := OpenFile(path)
	underNext, _ := cli.Seal([]byte("w"), nil)
	if got, err := server.Open(underNext, nil); err != nil || string(got) != "w" {
		t.Fatalf("running keyring did not pick up the new key: %v", err)
	}
	time.Sleep(ReloadInterval + 10*time.Millisecond)
	fresh, _ := server.Seal([]byte("x"), nil)
	if !cli.Current(fresh) {
		t.Fatal("the running keyring still seals under the old key")
	}
	if err := os.WriteFile(path, []byte("not a key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenFile(path); err == nil {
		t.Fatal("a corrupt key file was accepted")
	}
}
