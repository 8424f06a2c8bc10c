package graph

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var (
	workerOnce sync.Once
	workerBins map[string]string
	workerErr  error
)

// workerBin builds guilds-code-parse (and the crashing variant) once per test binary into a temporary
// folder with the current sources; GOCACHE keeps it to a link. name is "guilds-code-parse" or "crashparse".
func workerBin(t testing.TB, name string) string {
	t.Helper()
	workerOnce.Do(func() {
		dir, err := os.MkdirTemp("", "graph-worker-")
		if err != nil {
			workerErr = err
			return
		}
		workerBins = map[string]string{}
		for n, pkg := range map[string]string{ParserName: "../../cmd/guilds-code-parse", "crashparse": "./testdata/crashparse"} {
			out := filepath.Join(dir, n)
			cmd := exec.Command("go", "build", "-o", out, pkg)
			cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
			if b, err := cmd.CombinedOutput(); err != nil {
				workerErr = fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
				return
			}
			workerBins[n] = out
		}
	})
	if workerErr != nil {
		t.Fatal(workerErr)
	}
	return workerBins[name]
}

// withWorker makes Open parse through the named worker binary (or, with bin "", a missing one) until the test ends.
func withWorker(t *testing.T, bin string) {
	oldUse, oldPath := useWorker, ParserPath
	useWorker = true
	ParserPath = func() (string, error) {
		if bin == "" {
			return oldPathMissing()
		}
		return bin, nil
	}
	t.Cleanup(func() { useWorker, ParserPath = oldUse, oldPath })
}

// oldPathMissing is ParserPath's answer when the parser is nowhere.
func oldPathMissing() (string, error) {
	t := os.Getenv("PATH")
	defer os.Setenv("PATH", t)
	os.Setenv("PATH", "")
	return defaultParserPath()
}

// benchChild, when set (by a cgo build), is what the test binary does when a benchmark re-executes it
// with parseOnlyEnv naming a file list.
var benchChild func(listFile string) int

// parseOnlyEnv names the file list of a test binary re-executed to parse with tree-sitter and nothing else.
const parseOnlyEnv = "GUILDS_BENCH_PARSE_ONLY"

// TestMain removes the worker binaries built for the tests.
func TestMain(m *testing.M) {
	if list := os.Getenv(parseOnlyEnv); list != "" && benchChild != nil {
		os.Exit(benchChild(list))
	}
	code := m.Run()
	for _, b := range workerBins {
		os.RemoveAll(filepath.Dir(b))
		break
	}
	os.Exit(code)
}

// writeExtras adds n Go files extraNN.go to root, each with one function calling helper.
func writeExtras(t *testing.T, root string, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		src := fmt.Sprintf("package main\n\nfunc extra%d() { helper() }\n", i)
		if err := os.WriteFile(filepath.Join(root, fmt.Sprintf("extra%02d.go", i)), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestWorkerGarbage: a parser that answers something unreadable fails the call with what it said,
// instead of blaming files one by one.
func TestWorkerGarbage(t *testing.T) {
	script := filepath.Join(t.TempDir(), ParserName)
	if err := os.WriteFile(script, []byte("#!/bin/sh\ncat >/dev/null\necho garbage\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	withWorker(t, script)
	home := newHome(t, "graph-go")
	start := time.Now()
	_, err := Open(context.Background(), filepath.Join(home, "repos", "graph-go"), filepath.Join(home, "cache"))
	if err == nil || !strings.Contains(err.Error(), "unknown frame") {
		t.Fatalf("garbage from the parser: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("took %s", d)
	}
}

// TestWorkerBudget: when the budget ends during a worker's build, the worker is stopped and the
// graph answers from what it has, counting the rest.
func TestWorkerBudget(t *testing.T) {
	withWorker(t, workerBin(t, ParserName))
	home := newHome(t, "graph-go")
	root := filepath.Join(home, "repos", "graph-go")
	list, err := walk(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	parsed, missing, failed, err := parseAll(ctx, root, list, nil)
	if err != nil || len(parsed) != 0 || missing != len(list) || len(failed) != 0 {
		t.Fatalf("cancelled: %d parsed, %d missing, %v failed, %v", len(parsed), missing, failed, err)
	}
}

// TestWorkerStopHandsOver: when the budget ends during a build, the worker is asked to stop and
// hands over the records it holds (fewer than one batch here, so none were written yet): only the
// file it was stuck on is missing, and it is not blamed for a crash.
func TestWorkerStopHandsOver(t *testing.T) {
	withWorker(t, workerBin(t, "crashparse"))
	home := newHome(t, "graph-go")
	root := filepath.Join(home, "repos", "graph-go")
	writeExtras(t, root, 20)
	if err := os.WriteFile(filepath.Join(root, "stall_me.go"), []byte("package main\n\nfunc stuck() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	start := time.Now()
	g, err := Open(ctx, root, filepath.Join(home, "cache"))
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 6*time.Second {
		t.Errorf("took %s: the worker did not stop when asked", d)
	}
	if g.Missing != 1 || g.File("stall_me.go") != nil || len(g.Failed) != 0 {
		t.Fatalf("missing %d (want 1: stall_me.go), stall_me.go in the graph: %v, failed %v", g.Missing, g.File("stall_me.go") != nil, g.Failed)
	}
	for i := 0; i < 20; i++ {
		if f := g.File(fmt.Sprintf("extra%02d.go", i)); f == nil || len(f.Syms()) != 1 {
			t.Fatalf("extra%02d.go was parsed before the stop and is not in the graph", i)
		}
	}
}

// packed is f with its blocks encoded, as the worker sends it.
func packed(f *File) *File {
	var scratch []byte
	f.pack(&scratch)
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
	rec := encodeRecord(packed(&File{Path: "a.go", Lang: "go", Size: 3, Hash: 7}))
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
			var got *File
			err := readFrames(bufio.NewReader(bytes.NewReader(tc.in)), 1, func(i int, b []byte) error {
				got = &File{Path: "a.go", Lang: "go"}
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
	other[len(reqMagic)+len(magic)] ^= 0xff // the format's version byte
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
	rec := encodeRecord(packed(&File{Path: "a.go", Lang: "go", Symbols: []Symbol{{Name: "f", Parent: -1, Start: 1, End: 2}}, Refs: []Ref{{Name: "g", Line: 1, From: 0}}, Imports: []Import{{Path: "x"}}}))
	f.Add(append(binary.AppendUvarint([]byte{'F', 0}, uint64(len(rec))), append(rec, 'Z', 1)...))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _, _, _ = decodeRequest(b)
		_ = readFrames(bufio.NewReader(bytes.NewReader(b)), 2, func(i int, rec []byte) error {
			f := &File{Path: "a.go", Lang: "go"}
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
