package search

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/runs"
)

// place is where a search runs: the engine starts in dir and is given target.
type place struct {
	dir    string // the run's working directory, links resolved
	target string // the searched path, relative to dir when under it, else absolute
	abs    string // the searched path, absolute with links resolved
	isDir  bool
}

// resolvePlace checks a path argument (default the working directory) against the workspace.
func resolvePlace(c *runs.Call, p string) (place, error) {
	if p == "" {
		p = "."
	}
	abs, err := c.Resolve(p)
	if err != nil {
		return place{}, fmt.Errorf("path %s: %w; pass a path inside the workspace", p, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return place{}, fmt.Errorf("path %s does not exist; pass a folder or file in the workspace (default the working directory)", p)
		}
		return place{}, fmt.Errorf("path %s: %w", p, err)
	}
	dir, err := filepath.EvalSymlinks(c.Cwd())
	if err != nil {
		return place{}, fmt.Errorf("working directory: %w", err)
	}
	pl := place{dir: dir, target: abs, abs: abs, isDir: fi.IsDir()}
	if r, ok := relUnder(dir, abs); ok {
		pl.target = r
	}
	return pl, nil
}

// relUnder returns p relative to dir when p is dir or below it.
func relUnder(dir, p string) (string, bool) {
	if !runs.Within(dir, p) {
		return "", false
	}
	r, err := filepath.Rel(dir, p)
	if err != nil || r == ".." || strings.HasPrefix(r, "../") {
		return "", false
	}
	return r, true
}

// display renders a path as an engine printed it so that it can be passed back to the file
// tools: relative to the working directory when under it, else absolute.
func (pl place) display(raw string) string {
	raw = strings.ToValidUTF8(raw, "\uFFFD")
	if !filepath.IsAbs(raw) {
		return filepath.Clean(raw)
	}
	if r, ok := relUnder(pl.dir, filepath.Clean(raw)); ok {
		return r
	}
	return filepath.Clean(raw)
}

// outcome is how an engine run ended.
type outcome struct {
	code     int    // exit status; -1 when the engine was stopped
	stderr   string // the start of its standard error
	stopped  bool   // the reader had enough and stopped the engine
	timedOut bool   // the search budget ran out first
}

// maxStderr bounds how much of an engine's standard error is kept.
const maxStderr = 16 << 10

// pipeSize is the capacity asked for the engine's output pipe: room for the whole output of
// most searches, so the engine seldom waits for the reader.
const pipeSize = 1 << 20

// readSize is the reader's buffer. A pipe read copies what the pipe holds, up to the buffer;
// every page of the buffer that a read reaches is a page fault in a fresh helper process, and
// a page fault costs more than a few more reads, so it stays small.
const readSize = 64 << 10

// stream runs bin in dir and hands each line of its standard output to each, until each
// returns false (the engine is then stopped), the output ends, or ctx ends. The engine runs in
// its own process group, which is killed on every early exit, so no process outlives the call.
func stream(ctx context.Context, dir, bin string, args []string, each func(line []byte) bool) (outcome, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd, stderr := engineCmd(ctx, dir, bin, args)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return outcome{}, fmt.Errorf("%s could not start: %w", textOf(bin), err)
	}
	if f, ok := out.(*os.File); ok {
		if rc, err := f.SyscallConn(); err == nil {
			_ = rc.Control(func(fd uintptr) { _, _ = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, pipeSize) })
		}
	}
	if err := cmd.Start(); err != nil {
		return startFailure(ctx, bin, err)
	}
	stopped := !eachLine(out, each)
	if stopped {
		cancel()
		_, _ = io.Copy(io.Discard, out)
	}
	werr := cmd.Wait()
	o := outcome{code: cmd.ProcessState.ExitCode(), stderr: stderr.String(), stopped: stopped}
	if !stopped && ctx.Err() != nil {
		o.timedOut = true
	}
	if werr != nil && o.code < 0 && !stopped && !o.timedOut {
		return o, fmt.Errorf("%s ended abnormally: %v", textOf(bin), werr)
	}
	return o, nil
}

// collect runs bin like stream, but the engine writes to an unnamed temporary file that is read
// once it has exited: an engine printing a line per matching file would otherwise wake the reader
// (and the scheduler's threads) a thousand times per search, which costs more than the file in
// the page cache. each returning false stops the reading, not the engine. Without a temporary
// file it streams.
func collect(ctx context.Context, dir, bin string, args []string, each func(line []byte) bool) (outcome, error) {
	f, err := tempOutput()
	if err != nil {
		return stream(ctx, dir, bin, args, each)
	}
	defer f.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd, stderr := engineCmd(ctx, dir, bin, args)
	cmd.Stdout = f
	if err := cmd.Start(); err != nil {
		return startFailure(ctx, bin, err)
	}
	werr := cmd.Wait()
	o := outcome{code: cmd.ProcessState.ExitCode(), stderr: stderr.String(), timedOut: ctx.Err() != nil}
	if werr != nil && o.code < 0 && !o.timedOut {
		return o, fmt.Errorf("%s ended abnormally: %v", textOf(bin), werr)
	}
	// What the engine wrote before it ended (or was stopped at the budget) is the answer.
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return o, fmt.Errorf("read the %s's output: %w", textOf(bin), err)
	}
	eachLine(f, each)
	return o, nil
}

// tempOutput opens an unnamed file in the temporary folder: nothing to remove afterwards, even
// when the helper is killed.
func tempOutput() (*os.File, error) {
	fd, err := unix.Open(os.TempDir(), unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), "engine output"), nil
}

// eachLine hands each line of r to each until each returns false (then it reports false) or r ends.
func eachLine(r io.Reader, each func(line []byte) bool) bool {
	br := bufio.NewReaderSize(r, readSize)
	var long []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long, chunk...)
			continue
		}
		line := chunk
		if long != nil {
			line = append(long, chunk...)
			long = nil
		}
		if len(line) > 0 && !each(line) {
			return false
		}
		if err != nil {
			return true
		}
	}
}

// startFailure is the outcome of an engine that did not start: the budget ended first, or the
// engine is not runnable (said in the tool's words, without the executable's path).
func startFailure(ctx context.Context, bin string, err error) (outcome, error) {
	if ctx.Err() != nil {
		return outcome{code: -1, timedOut: true}, nil
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return outcome{}, fmt.Errorf("%s could not start: %v", textOf(bin), err)
}

// engineCmd prepares an engine run in dir: its own process group, killed whole when ctx ends,
// with the start of its standard error kept.
func engineCmd(ctx context.Context, dir, bin string, args []string) (*exec.Cmd, *limitedBuffer) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	stderr := &limitedBuffer{}
	cmd.Stderr = stderr
	return cmd, stderr
}

// textOf names an engine binary in the tool's words.
func textOf(bin string) string {
	if filepath.Base(bin) == syntaxEngine.bin {
		return syntaxEngine.what
	}
	return textEngine.what
}

// limitedBuffer keeps the first maxStderr bytes written to it.
type limitedBuffer struct{ bytes.Buffer }

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := maxStderr - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
