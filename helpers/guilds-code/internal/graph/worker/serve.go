package worker

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/graph"
)

// parseInProcess parses with newExtractor the files in todo on every core; a file left when ctx ends is nil.
func parseInProcess(ctx context.Context, root string, todo []Job) []*graph.File {
	out := make([]*graph.File, len(todo))
	workers := min(runtime.GOMAXPROCS(0), len(todo))
	var next int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := newExtractor()
			defer x.Close()
			var scratch []byte
			for ctx.Err() == nil {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= len(todo) {
					return
				}
				// Encoding the blocks here spreads it over the parsing cores; the store then only copies them.
				if f := parseOne(ctx, x, root, todo[i]); f != nil {
					f.Pack(&scratch)
					out[i] = f
				}
			}
		}()
	}
	wg.Wait()
	return out
}

// parseOne reads and parses one file; it is nil only when ctx ended during its parse.
func parseOne(ctx context.Context, x Extractor, root string, s Job) *graph.File {
	src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(s.Rel)))
	if err != nil {
		// Gone or unreadable since the walk: leave it out; the next refresh sees it again.
		return &graph.File{Path: s.Rel, Lang: s.Lang.Name, Size: -1}
	}
	f := &graph.File{Path: s.Rel, Lang: s.Lang.Name, Size: int64(len(src)), Mtime: s.Mtime, Hash: graph.HashContent(src)}
	if err := x.Extract(ctx, s.Lang, src, f); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		f.Symbols, f.Refs, f.Imports = nil, nil, nil
	}
	return f
}

// ParseMain is guilds-code-parse: it reads one parse request on in and answers on out (see reqMagic).
func ParseMain(args []string, in io.Reader, out, errOut io.Writer) int {
	if newExtractor == nil {
		fmt.Fprintf(errOut, "%s was built without cgo, so it has no tree-sitter grammars: build it with CGO_ENABLED=1 (`make build` does)\n", ParserName)
		return 1
	}
	if len(args) > 0 {
		fmt.Fprintf(errOut, "usage: %s < request\n%s parses source files with tree-sitter for guilds-code, which starts it with a parse request on standard input; it takes no arguments\n", ParserName, ParserName)
		return 2
	}
	// The worker's live heap is a few records in flight: collecting it four times less often costs little
	// memory and gives the parsers back the time.
	debug.SetGCPercent(400)
	// guilds-code asks the worker to stop with SIGTERM when its budget ends; it then hands over the
	// records it holds.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if err := ServeParse(ctx, in, out, os.NewFile(slotsFD, "slots"), nil); err != nil {
		if ctx.Err() == nil {
			fmt.Fprintf(errOut, "%s: %v\n", ParserName, err)
		}
		return 1
	}
	return 0
}

// ServeParse answers one parse request read from in with frames on out, parsing with the request's
// number of parsers, each with its own newExtractor (which must be set). slots is the slots file
// guilds-code passed (nil: none is kept). before, when set, sees each file's path just before its
// parse (tests use it to crash a worker on a chosen file). When ctx ends it writes the records it holds at once, starts no other file and returns
// ctx's error. It reads files and writes nothing but out and the slots.
func ServeParse(ctx context.Context, in io.Reader, out io.Writer, slotsFile *os.File, before func(rel string)) error {
	req, err := io.ReadAll(in)
	if err != nil {
		return fmt.Errorf("read the request: %w", err)
	}
	root, jobs, files, err := decodeRequest(req)
	var slots []uint64
	if err == nil && slotsFile != nil {
		var unmap func()
		if slots, unmap, err = mapSlots(slotsFile, jobs); err == nil {
			defer unmap()
		}
	}
	if err != nil {
		msg := binary.AppendUvarint([]byte{'E'}, uint64(len(err.Error())))
		_, _ = out.Write(append(msg, err.Error()...))
		return err
	}
	var (
		mu       sync.Mutex
		next     int
		answered int
		pending  = make([]byte, 0, flushBytes+64<<10)
		werr     error
	)
	// write sends what the answer holds; the caller holds mu.
	write := func() {
		if werr == nil && len(pending) > 0 {
			if _, err := out.Write(pending); err != nil {
				werr = fmt.Errorf("write the answer: %w", err)
			}
		}
		pending = pending[:0]
	}
	// claim adds the frame of the file just parsed to the answer, writing the answer once it holds
	// flushBytes (at once after ctx ended), and hands out the next file.
	claim := func(frame []byte) (int, bool) {
		mu.Lock()
		defer mu.Unlock()
		if len(frame) > 0 {
			pending = append(pending, frame...)
			answered++
		}
		if len(pending) >= flushBytes || ctx.Err() != nil {
			write()
		}
		i := next
		if i < len(files) && werr == nil && ctx.Err() == nil {
			next++
			return i, true
		}
		return i, false
	}
	// When ctx ends, the records collected so far go out at once, while the parses in flight stop.
	stopped := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		write()
	})
	defer stopped()
	var wg sync.WaitGroup
	for w := 0; w < min(jobs, len(files)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := newExtractor()
			defer x.Close()
			var frame, scratch []byte
			for {
				i, ok := claim(frame)
				if slots != nil {
					// Set before the parse: if it crashes, guilds-code finds the file here.
					slot := uint64(0)
					if ok {
						slot = uint64(i) + 1
					}
					atomic.StoreUint64(&slots[w], slot)
				}
				if !ok {
					return
				}
				j := files[i]
				if before != nil {
					before(j.Rel)
				}
				f := parseOne(ctx, x, root, Job{Rel: j.Rel, Lang: graph.LangNamed(j.Lang), Size: j.Size, Mtime: j.Mtime})
				if f == nil {
					// Stopped during its parse: the file is left for the next build.
					frame = frame[:0]
					continue
				}
				f.Pack(&scratch)
				rec := encodeRecord(f)
				frame = binary.AppendUvarint(append(frame[:0], 'F'), uint64(i))
				frame = binary.AppendUvarint(frame, uint64(len(rec)))
				frame = append(frame, rec...)
			}
		}()
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if answered < len(files) && werr == nil {
		// Stopped before every file was parsed: what was parsed goes out, without the trailer.
		write()
		return ctx.Err()
	}
	pending = binary.AppendUvarint(append(pending, 'Z'), uint64(len(files)))
	write()
	return werr
}
