package store

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/graph"
	"github.com/guildsai/guilds/helpers/guilds-code/internal/graph/worker"
	"github.com/guildsai/guilds/shared/atomicfile"
)

// MaxFileBytes is the largest source file the graph parses; larger ones are generated data, not code.
const MaxFileBytes = 1 << 20

// skipDirs are folders never walked: version control, dependencies and build output.
var skipDirs = map[string]bool{
	".git": true, ".hg": true, ".svn": true, "node_modules": true, "vendor": true, "third_party": false,
	"bower_components": true, "__pycache__": true, ".venv": true, "venv": true, ".tox": true,
	".mypy_cache": true, ".pytest_cache": true, "target": true, "dist": true, ".next": true, ".cache": true,
}

// Graph is a repository's graph as Open brought it up to date: the files and their name index, and
// what the refresh did.
type Graph struct {
	*graph.Graph
	Missing int              // files not parsed because the budget ran out
	Changed int              // files re-parsed by this refresh
	Failed  []worker.Failure // files the parser crashed on, kept without symbols until they change
	names   nameIndex        // the stored name index of Files
	cache   string           // the graph folder
	counted bool             // symbols' Refs are current
}

// dirent is one name a folder listing gave, with its type (unix.DT_*, DT_UNKNOWN when not given).
type dirent struct {
	name string
	typ  uint8
}

var direntBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// readDir lists an open folder with getdents64 directly: no per-entry allocation beyond the name,
// and none of the descriptor bookkeeping (poller registration, blocking mode) os.File does.
func readDir(fd int) ([]dirent, error) {
	bp := direntBufs.Get().(*[]byte)
	defer direntBufs.Put(bp)
	buf := *bp
	var out []dirent
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			return out, nil
		}
		// struct linux_dirent64: ino u64, off s64, reclen u16, type u8, name NUL-terminated.
		for off := 0; off+19 <= n; {
			reclen := int(binary.LittleEndian.Uint16(buf[off+16:]))
			if reclen < 20 || off+reclen > n {
				break
			}
			name := buf[off+19 : off+reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			if len(name) > 0 && string(name) != "." && string(name) != ".." {
				out = append(out, dirent{name: string(name), typ: buf[off+18]})
			}
			off += reclen
		}
	}
}

// walk lists the repository's source files in languages the graph parses, honouring .gitignore.
// Folders are listed concurrently: the stat walk is the whole cost of a query when nothing changed.
func walk(ctx context.Context, root string) ([]worker.Job, error) {
	var rules []ignoreRule
	if b, err := os.ReadFile(filepath.Join(root, ".git", "info", "exclude")); err == nil {
		rules = append(rules, parseGitignore("", string(b))...)
	}
	if _, err := os.ReadDir(root); err != nil {
		return nil, fmt.Errorf("list %s: %w", root, err)
	}
	var (
		mu  sync.Mutex
		out []worker.Job
		wg  sync.WaitGroup
		sem = make(chan struct{}, 4*runtime.GOMAXPROCS(0))
	)
	var visit func(dir, rel string, rules []ignoreRule)
	visit = func(dir, rel string, rules []ignoreRule) {
		if ctx.Err() != nil {
			return
		}
		fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return
		}
		defer unix.Close(fd)
		entries, err := readDir(fd)
		if err != nil {
			return
		}
		for _, e := range entries {
			if e.name == ".gitignore" && e.typ == unix.DT_REG {
				if b, err := os.ReadFile(filepath.Join(dir, ".gitignore")); err == nil {
					rules = append(rules[:len(rules):len(rules)], parseGitignore(rel, string(b))...)
				}
				break
			}
		}
		var local []worker.Job
		join := func(name string) string {
			if rel == "" {
				return name
			}
			return rel + "/" + name
		}
		for _, e := range entries {
			name := e.name
			var st unix.Stat_t
			typ := e.typ
			if typ == unix.DT_UNKNOWN {
				// Some filesystems leave the type out of the listing: ask for it.
				if unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
					continue
				}
				switch st.Mode & unix.S_IFMT {
				case unix.S_IFDIR:
					typ = unix.DT_DIR
				case unix.S_IFREG:
					typ = unix.DT_REG
				}
			}
			switch typ {
			case unix.DT_DIR:
				r := join(name)
				if skipDirs[name] || ignored(rules, r, true) {
					continue
				}
				sub := filepath.Join(dir, name)
				select {
				case sem <- struct{}{}:
					wg.Add(1)
					go func() {
						defer wg.Done()
						visit(sub, r, rules)
						<-sem
					}()
				default:
					visit(sub, r, rules)
				}
			case unix.DT_REG:
				l := graph.LangFor(name)
				if l == nil {
					continue
				}
				r := join(name)
				if len(rules) > 0 && ignored(rules, r, false) {
					continue
				}
				// One fstatat relative to the open folder: no path walk in the kernel, no allocation.
				if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size > MaxFileBytes {
					continue
				}
				local = append(local, worker.Job{Rel: r, Lang: l, Size: st.Size, Mtime: st.Mtim.Sec*1e9 + st.Mtim.Nsec})
			}
		}
		mu.Lock()
		out = append(out, local...)
		mu.Unlock()
	}
	visit(root, "", rules)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Rel < out[j].Rel })
	return out, nil
}

// Open brings the graph of the repository at root up to date in cacheDir and returns it. It re-parses
// only files whose size, mtime and then content changed, holds a lock while it writes, and replaces
// the graph file atomically. When ctx ends first it returns what it has, with Missing set.
func Open(ctx context.Context, root, cacheDir string) (*Graph, error) {
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return nil, fmt.Errorf("create graph folder: %w", err)
	}
	unlock, err := lock(ctx, filepath.Join(cacheDir, "lock"))
	if err != nil {
		return nil, err
	}
	defer unlock()

	graphPath := filepath.Join(cacheDir, "graph.bin")
	var old []*graph.File
	var names nameIndex
	counted := false
	blocksName := ""
	if buf, blocks, err := readGraph(graphPath); err == nil {
		// Decoding makes few, long-lived objects: collecting garbage meanwhile only costs time.
		gc := debug.SetGCPercent(-1)
		old, counted, names, err = decodeGraph(buf, blocks)
		debug.SetGCPercent(gc)
		if err != nil {
			old = nil // a corrupt or older graph is rebuilt from scratch
		} else {
			blocksName, _, _ = graphHeader(buf)
		}
	}
	list, err := walk(ctx, root)
	if err != nil {
		return nil, fmt.Errorf("walk %s: %w", root, err)
	}
	g := &Graph{Graph: &graph.Graph{Root: root, Files: make([]*graph.File, 0, len(list))}, cache: cacheDir, counted: counted, names: names}
	var todo []worker.Job
	var prev []*graph.File // the stored file of each todo entry, nil when new
	changed := len(old) != len(list)
	// Both lists are sorted by path: walk them side by side instead of hashing every path.
	oi := 0
	for _, s := range list {
		for oi < len(old) && old[oi].Path < s.Rel {
			oi++
		}
		var f *graph.File
		if oi < len(old) && old[oi].Path == s.Rel {
			f = old[oi]
		}
		if f != nil && f.Size == s.Size && f.Mtime == s.Mtime && f.Lang == s.Lang.Name {
			g.Files = append(g.Files, f)
			continue
		}
		todo = append(todo, s)
		prev = append(prev, f)
	}
	parsed, missing, _, err := parseAll(ctx, root, todo, prev)
	if err != nil {
		return nil, err
	}
	if len(parsed) > 0 {
		changed = true
		g.Files = append(g.Files, parsed...)
		sort.Slice(g.Files, func(i, j int) bool { return g.Files[i].Path < g.Files[j].Path })
	}
	g.Missing = missing
	// A file the parser crashed on is kept, without symbols, so that it is not parsed again until it
	// changes; every answer names it.
	for _, f := range g.Files {
		if f.Crash != "" {
			g.Failed = append(g.Failed, worker.Failure{Path: f.Path, Reason: f.Crash})
		}
	}
	g.Changed = len(parsed)
	if changed {
		// Reference counts are global; they are recomputed when a tool that shows them asks (Counted).
		g.counted = false
		// Storing makes few, long-lived objects: collecting garbage meanwhile only costs time.
		gc := debug.SetGCPercent(-1)
		// The graph answers with the name index just written, the one the next call reads.
		g.names, err = storeGraph(cacheDir, blocksName, g.Files, false, names, len(old))
		debug.SetGCPercent(gc)
		if err != nil {
			return nil, err
		}
	}
	g.Names = g.names
	return g, nil
}

// Counted makes the symbols' reference counts current, storing them for the next call when it can.
func (g *Graph) Counted(ctx context.Context) {
	if g.counted {
		return
	}
	g.CountRefs()
	g.counted = true
	if g.cache == "" {
		return
	}
	unlock, err := lock(ctx, filepath.Join(g.cache, "lock"))
	if err != nil {
		return
	}
	defer unlock()
	// Store only when no other call replaced the graph since this one read it.
	graphPath := filepath.Join(g.cache, "graph.bin")
	buf, blocks, err := readGraph(graphPath)
	if err != nil {
		return
	}
	files, _, _, err := decodeGraph(buf, blocks)
	if err != nil || len(files) != len(g.Files) {
		return
	}
	for i, f := range files {
		if f.Path != g.Files[i].Path || f.Hash != g.Files[i].Hash || f.Mtime != g.Files[i].Mtime {
			return
		}
	}
	// Every symbol block changed: they go to a fresh blocks file.
	if names, err := storeGraph(g.cache, "", g.Files, true, g.names, len(g.Files)); err == nil {
		g.names = names
		g.Names = names
	}
}

// BlocksSlack is how many bytes of dead blocks a blocks file may hold beyond its live ones before a
// store writes a fresh one; tests lower it.
var BlocksSlack int64 = 8 << 20

// storeGraph writes the graph of files into cacheDir under its lock. When the blocks file the graph
// was read from (oldBlocks) already holds most files' blocks and little that is no longer used, the
// blocks of new and changed files are appended to it and only the table and the name index are
// written again; otherwise every block goes to a fresh blocks file and the others are removed.
// graph.bin is replaced atomically last, so a reader sees the old graph or the new one, whole.
// It returns the name index written, read from the new graph.bin.
func storeGraph(cacheDir, oldBlocks string, files []*graph.File, counted bool, prev nameIndex, prevFiles int) (nameIndex, error) {
	err := storeOnce(cacheDir, oldBlocks, files, counted, prev, prevFiles)
	if errors.Is(err, errIndexDamaged) {
		// Carry nothing over from a damaged index: every file's names are read again.
		err = storeOnce(cacheDir, oldBlocks, files, counted, nameIndex{}, prevFiles)
	}
	if err != nil {
		return nameIndex{}, err
	}
	ix, err := readIndex(filepath.Join(cacheDir, "graph.bin"))
	if err != nil {
		return nameIndex{}, fmt.Errorf("read the graph just written: %w", err)
	}
	return ix, nil
}

// storeOnce is one attempt of storeGraph.
func storeOnce(cacheDir, oldBlocks string, files []*graph.File, counted bool, prev nameIndex, prevFiles int) error {
	graphPath := filepath.Join(cacheDir, "graph.bin")
	if oldBlocks != "" {
		var live int64
		reusable := 0
		for _, f := range files {
			if f.Symbols == nil && f.Blocks.SymOff > 0 {
				live += int64(len(f.Blocks.Syms) + len(f.Blocks.Refs))
				reusable++
			}
		}
		st, err := os.Stat(filepath.Join(cacheDir, oldBlocks))
		// Append while at least 3/4 of the files are already stored and the file is not mostly dead blocks.
		if err == nil && 4*reusable >= 3*len(files) && st.Size() <= 2*live+BlocksSlack {
			fh, err := os.OpenFile(filepath.Join(cacheDir, oldBlocks), os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				return fmt.Errorf("open graph blocks: %w", err)
			}
			bs := &blockSink{base: st.Size(), reuse: true}
			bs.e.W = fh
			err = writeAtomic(graphPath, func(w io.Writer) error { return encodeTo(w, bs, oldBlocks, files, counted, prev, prevFiles) })
			if cerr := fh.Close(); err == nil && cerr != nil {
				err = fmt.Errorf("write graph blocks: %w", cerr)
			}
			return err
		}
	}
	fh, err := os.CreateTemp(cacheDir, "blocks-*.bin")
	if err != nil {
		return fmt.Errorf("write graph blocks: %w", err)
	}
	name := filepath.Base(fh.Name())
	bs := &blockSink{}
	bs.e.W = fh
	bs.e.Buf = append(bs.e.Buf, blocksMagic...)
	err = writeAtomic(graphPath, func(w io.Writer) error { return encodeTo(w, bs, name, files, counted, prev, prevFiles) })
	if cerr := fh.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("write graph blocks: %w", cerr)
	}
	if err != nil {
		os.Remove(fh.Name())
		return err
	}
	// Processes still reading an older graph keep their mapping of its blocks file after it is removed.
	if stale, _ := filepath.Glob(filepath.Join(cacheDir, "blocks-*.bin")); len(stale) > 0 {
		for _, p := range stale {
			if filepath.Base(p) != name {
				os.Remove(p)
			}
		}
	}
	return nil
}

// lock takes the graph folder's lock, waiting for another call's build until ctx ends.
func lock(ctx context.Context, path string) (func(), error) {
	fh, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open graph lock: %w", err)
	}
	for {
		err := syscall.Flock(int(fh.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				_ = syscall.Flock(int(fh.Fd()), syscall.LOCK_UN)
				fh.Close()
			}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			fh.Close()
			return nil, fmt.Errorf("lock graph: %w", err)
		}
		select {
		case <-ctx.Done():
			fh.Close()
			return nil, fmt.Errorf("another call is still building this graph and the wait budget ran out; try again")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// writeAtomic replaces path with what write produces (buffered), through atomicfile.
func writeAtomic(path string, write func(io.Writer) error) error {
	err := atomicfile.Write(path, 0o600, func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 1<<20)
		if err := write(bw); err != nil {
			return err
		}
		return bw.Flush()
	})
	if err != nil {
		return fmt.Errorf("write graph: %w", err)
	}
	return nil
}
