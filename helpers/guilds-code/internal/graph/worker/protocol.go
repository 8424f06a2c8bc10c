package worker

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/graph"
	"github.com/guildsai/guilds/helpers/guilds-code/internal/graph/codec"
)

// ParserName is the companion binary that parses files with tree-sitter for a guilds-code built without cgo.
const ParserName = "guilds-code-parse"

// The parse worker protocol. guilds-code writes one request on the worker's standard input:
//
//	reqMagic, graph format (magic), root, jobs (parser goroutines), count, then per file: path,
//	language, size, mtime
//
// and passes it the slots file as descriptor 3: one little-endian uint64 per parser, which holds
// 1 + the index of the file that parser is parsing (0 when none). The worker answers on its standard
// output with frames, one byte of type then its body:
//
//	'F' i len record file i is parsed: its File in the graph file's record encoding (encodeRecord)
//	'E' message      the request was refused; nothing else follows
//	'Z' count        every file was answered
//
// It writes its frames in batches of about flushBytes, so that guilds-code, which shares the cores
// with the parsers, wakes once a batch and not once a file. A worker that dies before 'Z' (a
// grammar crashing on a hostile file) has answered the files whose frames it wrote; the files its
// slots name are the suspects, and the rest are parsed again by a fresh worker.
const reqMagic = "GRAFTP\x00\x02"

// flushBytes is about how much answer the worker collects before it writes.
const flushBytes = 256 << 10

// slotsFD is the descriptor the worker finds its slots file at.
const slotsFD = 3

// parseJob is one file the worker parses.
type parseJob struct {
	Rel   string
	Lang  string
	Size  int64
	Mtime int64
}

// encodeRequest frames a parse request.
func encodeRequest(root string, jobs int, files []parseJob) []byte {
	e := codec.Encoder{}
	e.Buf = append(e.Buf, reqMagic...)
	e.Str(graph.Format) // the record encoding is the graph format's: both ends must be of one build
	e.Str(root)
	e.UV(uint64(jobs))
	e.UV(uint64(len(files)))
	for _, f := range files {
		e.Str(f.Rel)
		e.Str(f.Lang)
		e.V(f.Size)
		e.V(f.Mtime)
	}
	return e.Buf
}

// decodeRequest reads a parse request, refusing paths that are absolute or climb out of the root.
func decodeRequest(b []byte) (root string, jobs int, files []parseJob, err error) {
	if !bytes.HasPrefix(b, []byte(reqMagic)) {
		if bytes.HasPrefix(b, []byte(reqMagic[:len(reqMagic)-1])) {
			return "", 0, nil, fmt.Errorf("guilds-code speaks another version of the parse protocol than this %s: they come from different builds; rebuild both with `make build`", ParserName)
		}
		return "", 0, nil, errors.New("not a parse request (bad header)")
	}
	d := codec.Decoder{Buf: b, Off: len(reqMagic)}
	if format := d.Str(); d.Err == nil && format != graph.Format {
		return "", 0, nil, fmt.Errorf("guilds-code asks for graph format %q and this %s writes %q: they come from different builds; rebuild both with `make build`", format, ParserName, graph.Format)
	}
	root = strings.Clone(d.Str())
	jobs = int(d.UV())
	n := d.Count(4)
	files = make([]parseJob, n)
	for i := 0; i < n && d.Err == nil; i++ {
		f := parseJob{Rel: d.Str(), Lang: d.Str(), Size: d.V(), Mtime: d.V()}
		if d.Err != nil {
			break
		}
		if f.Rel == "" || strings.HasPrefix(f.Rel, "/") || f.Rel == ".." || strings.HasPrefix(f.Rel, "../") || strings.Contains(f.Rel, "/../") || strings.HasSuffix(f.Rel, "/..") {
			return "", 0, nil, fmt.Errorf("parse request: path %q is not inside the repository", f.Rel)
		}
		if graph.LangNamed(f.Lang) == nil {
			return "", 0, nil, fmt.Errorf("parse request: unknown language %q for %s", f.Lang, f.Rel)
		}
		files[i] = f
	}
	if d.Err != nil {
		return "", 0, nil, fmt.Errorf("parse request: %w", d.Err)
	}
	if !filepath.IsAbs(root) {
		return "", 0, nil, fmt.Errorf("parse request: root %q is not absolute", root)
	}
	if jobs < 1 {
		jobs = 1
	}
	return root, jobs, files, nil
}

// encodeRecord is one parsed and packed (File.pack) file as the worker sends it: the fields of its
// graph file table entry with its symbol and call site blocks inline; decodeRecord reads it back.
func encodeRecord(f *graph.File) []byte {
	e := codec.Encoder{}
	e.V(f.Size)
	e.Buf = binary.LittleEndian.AppendUint64(e.Buf, f.Hash)
	e.Str(f.Pkg)
	e.UV(uint64(f.Blocks.NSyms))
	e.Blob(f.Blocks.Syms)
	for _, w := range f.Blocks.Bloom {
		e.Buf = binary.LittleEndian.AppendUint64(e.Buf, w)
	}
	e.Blob(f.Blocks.Refs)
	e.UV(uint64(len(f.Imports)))
	for _, im := range f.Imports {
		e.Str(im.Alias)
		e.Str(im.Path)
		e.Str(im.Name)
	}
	return e.Buf
}

// decodeRecord reads a record into f (whose path, language and mtime the request gave); its strings
// and blocks point into b. Symbols and call sites stay encoded until a query asks (Syms, LoadRefs).
func decodeRecord(b []byte, f *graph.File) error {
	d := codec.Decoder{Buf: b}
	f.Size = d.V()
	f.Hash = d.U64()
	f.Pkg = d.Str()
	ns := d.UV()
	f.Blocks.Syms = d.Blob()
	if d.Err == nil && (ns > uint64(len(f.Blocks.Syms)/graph.MinSymBytes) || ns == 0 && len(f.Blocks.Syms) > 0) {
		d.Fail("symbol count")
	}
	f.Blocks.NSyms = int(ns)
	for k := range f.Blocks.Bloom {
		f.Blocks.Bloom[k] = d.U64()
	}
	f.Blocks.Refs = d.Blob()
	f.Blocks.Imps, f.Blocks.NImps = graph.ReadImports(&d)
	if d.Err == nil && d.Off != len(b) {
		d.Fail("record length")
	}
	if d.Err != nil {
		return fmt.Errorf("parse worker record of %s: %w", f.Path, d.Err)
	}
	return nil
}

// ParserPath finds guilds-code-parse; tests point it elsewhere.
var ParserPath = defaultParserPath

// defaultParserPath finds guilds-code-parse: next to the running executable, then on PATH.
func defaultParserPath() (string, error) {
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), ParserName)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	if p, err := exec.LookPath(ParserName); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("the code graph needs its parser, %s, next to guilds-code or on PATH, and there is none: "+
		"build it with `make build` (it lands in bin/ beside guilds-code; the sandbox image has it at /usr/local/bin/%s); "+
		"every other tool works without it", ParserName, ParserName)
}

// Failure is a file the parser crashed on: it is left out of the graph and answers say so.
type Failure struct {
	Path   string
	Reason string
}

// workerRun is what one run of the worker over a batch answered.
type workerRun struct {
	done    []bool // the batch files answered with 'F'
	started []bool // the batch files the worker's slots named when it stopped
	crash   error  // why the worker stopped before its trailer; nil when it finished
	fatal   error  // the worker answered something guilds-code cannot read: no file is to blame
}

// parseWithWorker parses todo through guilds-code-parse processes. A worker that crashes costs only
// the file it crashed on: the files it had started are retried one at a time to find it, the rest
// go to a fresh worker. It returns the parsed files (nil for the ones not parsed), the files the
// parser crashed on, and an error when the worker cannot run at all.
func parseWithWorker(ctx context.Context, root string, todo []Job) ([]*graph.File, []Failure, error) {
	bin, err := ParserPath()
	if err != nil {
		return nil, nil, err
	}
	out := make([]*graph.File, len(todo))
	var failed []Failure
	jobs := runtime.GOMAXPROCS(0)
	type batch struct {
		idx  []int
		jobs int
	}
	all := make([]int, len(todo))
	for i := range all {
		all[i] = i
	}
	queue := []batch{{all, jobs}}
	for len(queue) > 0 && ctx.Err() == nil {
		b := queue[0]
		queue = queue[1:]
		if len(b.idx) == 0 {
			continue
		}
		run := runWorker(ctx, bin, root, todo, b.idx, b.jobs, out)
		if run.fatal != nil && ctx.Err() == nil {
			return nil, nil, fmt.Errorf("the parser %s: %w", bin, run.fatal)
		}
		if run.crash == nil || ctx.Err() != nil {
			continue
		}
		var suspects, rest []int
		for k, i := range b.idx {
			switch {
			case run.done[k]:
			case run.started[k]:
				suspects = append(suspects, i)
			default:
				rest = append(rest, i)
			}
		}
		progress := len(b.idx) - len(suspects) - len(rest)
		switch {
		case len(suspects) == 0 && progress == 0:
			// It died before parsing anything: the parser itself is broken, not one file.
			return nil, nil, fmt.Errorf("the parser %s failed before parsing any file: %w", bin, run.crash)
		case len(suspects) == 0:
			// It died between files (killed from outside): the rest go to a fresh worker.
			queue = append([]batch{{rest, jobs}}, queue...)
		case len(suspects) == 1:
			failed = append(failed, Failure{Path: todo[suspects[0]].Rel, Reason: run.crash.Error()})
			queue = append([]batch{{rest, jobs}}, queue...)
		default:
			// One parser at a time pins the crash on one file.
			queue = append([]batch{{suspects, 1}, {rest, jobs}}, queue...)
		}
	}
	return out, failed, nil
}

// runWorker runs one worker process over the batch idx of todo, filling out as records arrive.
func runWorker(ctx context.Context, bin, root string, todo []Job, idx []int, jobs int, out []*graph.File) workerRun {
	if jobs > len(idx) {
		jobs = len(idx)
	}
	run := workerRun{done: make([]bool, len(idx)), started: make([]bool, len(idx))}
	files := make([]parseJob, len(idx))
	for k, i := range idx {
		s := todo[i]
		files[k] = parseJob{Rel: s.Rel, Lang: s.Lang.Name, Size: s.Size, Mtime: s.Mtime}
	}
	slots, err := newSlots(jobs)
	if err != nil {
		run.fatal = err
		return run
	}
	defer slots.Close()
	cmd := exec.CommandContext(ctx, bin)
	cmd.Dir = "/"
	cmd.Stdin = bytes.NewReader(encodeRequest(root, jobs, files))
	cmd.ExtraFiles = []*os.File{slots} // descriptor slotsFD
	var stderr bytes.Buffer
	cmd.Stderr = &limitedWriter{w: &stderr, n: 4 << 10}
	// The worker dies with guilds-code.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	// When the budget ends the worker is asked to stop (SIGTERM): it hands over the records it holds
	// and exits; one that does not is killed 2 s later.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 2 * time.Second
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		run.crash = fmt.Errorf("start %s: %w", bin, err)
		return run
	}
	if err := cmd.Start(); err != nil {
		run.crash = fmt.Errorf("start %s: %w", bin, err)
		return run
	}
	// The parsers write under one lock: with room for a few batches in the pipe they go on parsing
	// while this process, sharing the cores with them, gets round to reading.
	if f, ok := stdout.(*os.File); ok {
		if rc, err := f.SyscallConn(); err == nil {
			_ = rc.Control(func(fd uintptr) { _, _ = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, 1<<20) })
		}
	}
	r := bufio.NewReaderSize(stdout, 64<<10)
	proto := readFrames(r, len(idx), func(k int, rec []byte) error {
		f := &graph.File{Path: files[k].Rel, Lang: files[k].Lang, Mtime: files[k].Mtime}
		if err := decodeRecord(rec, f); err != nil {
			return err
		}
		out[idx[k]] = f
		run.done[k] = true
		return nil
	})
	var died *workerDied
	if proto != nil && !errors.As(proto, &died) {
		// It answered something unreadable: stop it; no file is to blame.
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		run.fatal = proto
		return run
	}
	_, _ = io.Copy(io.Discard, r)
	werr := cmd.Wait()
	if proto == nil && werr == nil {
		return run
	}
	// The files its parsers were on when it stopped are the suspects.
	buf := make([]byte, 8*jobs)
	if _, err := slots.ReadAt(buf, 0); err != nil {
		run.fatal = fmt.Errorf("read the parse worker's slots: %w", err)
		return run
	}
	for p := 0; p < jobs; p++ {
		if v := binary.LittleEndian.Uint64(buf[8*p:]); v > 0 && v <= uint64(len(idx)) {
			run.started[v-1] = true
		}
	}
	switch {
	case werr != nil:
		run.crash = describeExit(werr, stderr.String())
	default:
		run.crash = proto
	}
	return run
}

// workerDied is the worker's output ending before its trailer: it crashed or was killed.
type workerDied struct{ err error }

func (e *workerDied) Error() string { return "parse worker output ended early: " + e.err.Error() }
func (e *workerDied) Unwrap() error { return e.err }

// newSlots makes the worker's slots file: shared memory of one uint64 per parser, zeroed.
func newSlots(jobs int) (*os.File, error) {
	var f *os.File
	if fd, err := unix.MemfdCreate("guilds-parse-slots", unix.MFD_CLOEXEC); err == nil {
		f = os.NewFile(uintptr(fd), "guilds-parse-slots")
	} else {
		// No memfd (an old kernel or a sandbox that forbids it): an unlinked temporary file does the same.
		if f, err = os.CreateTemp("", "guilds-parse-slots-*"); err != nil {
			return nil, fmt.Errorf("make the parse worker's slots file: %w", err)
		}
		os.Remove(f.Name())
	}
	if err := f.Truncate(int64(8 * jobs)); err != nil {
		f.Close()
		return nil, fmt.Errorf("size the parse worker's slots file: %w", err)
	}
	return f, nil
}

// mapSlots maps the worker's slots file, which must hold n slots, shared with guilds-code.
func mapSlots(f *os.File, n int) ([]uint64, func(), error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return nil, nil, fmt.Errorf("the slots file on descriptor %d: %w (guilds-code starts %s with it)", slotsFD, err, ParserName)
	}
	if st.Size < int64(8*n) {
		return nil, nil, fmt.Errorf("the slots file on descriptor %d holds %d bytes, not the %d of %d parsers", slotsFD, st.Size, 8*n, n)
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, 8*n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, nil, fmt.Errorf("map the slots file: %w", err)
	}
	return unsafe.Slice((*uint64)(unsafe.Pointer(&mem[0])), n), func() { _ = unix.Munmap(mem) }, nil
}

// readFrames reads the worker's frames until its trailer, calling done for each record. It returns
// nil only when the trailer arrived.
func readFrames(r *bufio.Reader, n int, done func(int, []byte) error) error {
	index := func() (int, error) {
		i, err := binary.ReadUvarint(r)
		if err != nil {
			return 0, &workerDied{err}
		}
		if i >= uint64(n) {
			return 0, fmt.Errorf("parse worker named file %d of %d", i, n)
		}
		return int(i), nil
	}
	for {
		typ, err := r.ReadByte()
		if err != nil {
			return &workerDied{err}
		}
		switch typ {
		case 'F':
			i, err := index()
			if err != nil {
				return err
			}
			size, err := binary.ReadUvarint(r)
			if err != nil {
				return &workerDied{err}
			}
			if size > 64<<20 {
				return fmt.Errorf("parse worker record of %d bytes", size)
			}
			rec := make([]byte, size)
			if _, err := io.ReadFull(r, rec); err != nil {
				return &workerDied{err}
			}
			if err := done(i, rec); err != nil {
				return err
			}
		case 'E':
			size, err := binary.ReadUvarint(r)
			if err != nil || size > 1<<16 {
				return errors.New("parse worker refused the request")
			}
			msg := make([]byte, size)
			_, _ = io.ReadFull(r, msg)
			return fmt.Errorf("parse worker refused the request: %s", msg)
		case 'Z':
			count, err := binary.ReadUvarint(r)
			if err != nil || count != uint64(n) {
				return fmt.Errorf("parse worker trailer counts %d files of %d", count, n)
			}
			return nil
		default:
			return fmt.Errorf("parse worker sent an unknown frame %q", typ)
		}
	}
}

// describeExit says how the worker ended: the signal that killed it or its status, with its last words.
func describeExit(err error, stderr string) error {
	var ee *exec.ExitError
	msg := err.Error()
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			msg = "the parser was killed by " + ws.Signal().String()
		} else {
			msg = fmt.Sprintf("the parser exited with status %d", ee.ExitCode())
		}
	}
	if line := lastLine(stderr); line != "" {
		msg += " (" + line + ")"
	}
	return errors.New(msg)
}

// lastLine is the first line of a crash report (Go's "fatal error: ..." or "panic: ..."), else the last line.
func lastLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "fatal error:") || strings.HasPrefix(l, "panic:") || strings.HasPrefix(l, "SIGSEGV") {
			return shorten(strings.TrimSpace(l), 200)
		}
	}
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return shorten(s, 200)
}

// limitedWriter keeps the first n bytes written to it and drops the rest.
type limitedWriter struct {
	w io.Writer
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(len(p), l.n)
		l.n -= k
		_, _ = l.w.Write(p[:k])
	}
	return len(p), nil
}

// shorten cuts s to at most n bytes on a character boundary.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}
