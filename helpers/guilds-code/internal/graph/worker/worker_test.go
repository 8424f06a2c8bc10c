package worker

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/graph"
)

// packed is f with its blocks encoded, as the worker sends it.
func packed(f *graph.File) *graph.File {
	var scratch []byte
	f.Pack(&scratch)
	return f
}

// TestReadFrames feeds the frame reader good and bad worker output.
func TestReadFrames(t *testing.T) {
	frame := func(parts ...any) []byte {
		var b []byte
		for _, p := range parts {
			switch v := p.(type) {
			case byte:
				b = append(b, v)
			case int:
				b = binary.AppendUvarint(b, uint64(v))
			case string:
				b = append(b, v...)
			}
		}
		return b
	}
	rec := encodeRecord(packed(&graph.File{Path: "a.go", Lang: "go", Size: 3, Hash: 7}))
	cases := []struct {
		name string
		in   []byte
		err  string
	}{
		{"ok", frame(byte('F'), 0, len(rec), string(rec), byte('Z'), 1), ""},
		{"truncated", frame(byte('F'), 0, len(rec)), "ended early"},
		{"no trailer", frame(byte('F'), 0, len(rec), string(rec)), "ended early"},
		{"nothing", frame(), "ended early"},
		{"index out of range", frame(byte('F'), 5, len(rec), string(rec)), "file 5 of 1"},
		{"unknown frame", frame(byte('Q')), "unknown frame"},
		{"start frame of the older protocol", frame(byte('S'), 0), "unknown frame"},
		{"refused", frame(byte('E'), 3, "bad"), "refused the request: bad"},
		{"short trailer", frame(byte('Z'), 0), "counts 0 files of 1"},
		{"bad record", frame(byte('F'), 0, 2, "xx", byte('Z'), 1), "record of a.go"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got *graph.File
			err := readFrames(bufio.NewReader(bytes.NewReader(tc.in)), 1, func(i int, b []byte) error {
				got = &graph.File{Path: "a.go", Lang: "go"}
				return decodeRecord(b, got)
			})
			if tc.err == "" {
				if err != nil || got == nil || got.Hash != 7 || got.Size != 3 {
					t.Fatalf("got %+v, %v", got, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("error %v, want it to contain %q", err, tc.err)
			}
		})
	}
}

// TestDecodeRequestRefuses: the worker refuses requests that would read outside the repository.
func TestDecodeRequestRefuses(t *testing.T) {
	for _, tc := range []struct {
		root, rel, lang, err string
	}{
		{"/r", "../etc/passwd.c", "c", "not inside the repository"},
		{"/r", "a/../../x.go", "go", "not inside the repository"},
		{"/r", "/etc/x.go", "go", "not inside the repository"},
		{"/r", "a.go", "cobol", "unknown language"},
		{"rel", "a.go", "go", "not absolute"},
	} {
		_, _, _, err := decodeRequest(encodeRequest(tc.root, 1, []parseJob{{Rel: tc.rel, Lang: tc.lang}}))
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s %s: error %v, want %q", tc.rel, tc.lang, err, tc.err)
		}
	}
	// A parser from another build (another graph format) says so instead of writing records this build misreads.
	other := append([]byte(reqMagic), encodeRequest("/r", 1, nil)[len(reqMagic):]...)
	other[len(reqMagic)+len(graph.Format)] ^= 0xff // the format's version byte
	if _, _, _, err := decodeRequest(other); err == nil || !strings.Contains(err.Error(), "rebuild both with `make build`") {
		t.Errorf("another format: %v", err)
	}
	// So does one that speaks another version of the protocol.
	older := encodeRequest("/r", 1, nil)
	older[len(reqMagic)-1]--
	if _, _, _, err := decodeRequest(older); err == nil || !strings.Contains(err.Error(), "another version of the parse protocol") {
		t.Errorf("another protocol version: %v", err)
	}
	root, jobs, files, err := decodeRequest(encodeRequest("/r", 2, []parseJob{{Rel: "a/b.go", Lang: "go", Size: 4, Mtime: 5}}))
	if err != nil || root != "/r" || jobs != 2 || len(files) != 1 || files[0] != (parseJob{"a/b.go", "go", 4, 5}) {
		t.Fatalf("round trip: %s %d %v %v", root, jobs, files, err)
	}
}

// FuzzWorkerInput feeds arbitrary bytes to both ends' decoders: the worker's request decoder and
// guilds-code's frame and record reader. They return errors, never panic.
func FuzzWorkerInput(f *testing.F) {
	f.Add(encodeRequest("/r", 2, []parseJob{{Rel: "a.go", Lang: "go", Size: 1, Mtime: 2}}))
	rec := encodeRecord(packed(&graph.File{Path: "a.go", Lang: "go", Symbols: []graph.Symbol{{Name: "f", Parent: -1, Start: 1, End: 2}}, Refs: []graph.Ref{{Name: "g", Line: 1, From: 0}}, Imports: []graph.Import{{Path: "x"}}}))
	f.Add(append(binary.AppendUvarint([]byte{'F', 0}, uint64(len(rec))), append(rec, 'Z', 1)...))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _, _, _ = decodeRequest(b)
		_ = readFrames(bufio.NewReader(bytes.NewReader(b)), 2, func(i int, rec []byte) error {
			f := &graph.File{Path: "a.go", Lang: "go"}
			if err := decodeRecord(rec, f); err != nil {
				return err
			}
			f.Syms()
			f.LoadRefs()
			return nil
		})
	})
}

// TestSlots: what the worker stores in its mapped slots, guilds-code reads from the file; a slots
// file too small for the request's parsers is refused.
func TestSlots(t *testing.T) {
	f, err := newSlots(2)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	slots, unmap, err := mapSlots(f, 2)
	if err != nil {
		t.Fatal(err)
	}
	atomic.StoreUint64(&slots[1], 42)
	unmap()
	buf := make([]byte, 16)
	if _, err := f.ReadAt(buf, 0); err != nil {
		t.Fatal(err)
	}
	if a, b := binary.LittleEndian.Uint64(buf), binary.LittleEndian.Uint64(buf[8:]); a != 0 || b != 42 {
		t.Fatalf("slots read %d, %d; want 0, 42", a, b)
	}
	if _, _, err := mapSlots(f, 3); err == nil || !strings.Contains(err.Error(), "holds 16 bytes, not the 24 of 3 parsers") {
		t.Fatalf("a short slots file: %v", err)
	}
}
