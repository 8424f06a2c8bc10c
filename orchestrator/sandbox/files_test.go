package sandbox

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator/sandbox/sandboxtest"
)

// hostHome is the host folder behind an agent's workspace in p.
func hostHome(p Provider, agentID string) string {
	switch p := p.(type) {
	case *Local:
		return filepath.Join(p.Root, agentID, "home")
	case *Bubblewrap:
		return filepath.Join(p.Root, agentID, "home")
	}
	return ""
}

// openers runs fn with openat2, and again with the component walk that stands in where openat2 is
// refused.
func openers(t *testing.T, fn func(t *testing.T)) {
	t.Run("openat2", fn)
	t.Run("walk", func(t *testing.T) {
		noOpenat2.Store(true)
		defer noOpenat2.Store(false)
		fn(t)
	})
}

// hangGuard fails the test when fn has not returned within d (far above what it takes).
func hangGuard(t *testing.T, d time.Duration, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %v", what, d)
	}
}

// TestReadFileNeverBlocksOrGrows: a read of a workspace file is bounded by its limit before any
// byte is read (a 64 GiB sparse file), answers at once for a FIFO with no writer, and refuses a
// link at the end or on the way; through openat2 and through the component walk.
func TestReadFileNeverBlocksOrGrows(t *testing.T) {
	ctx := context.Background()
	outside := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(outside, []byte("host secret"), 0o644)
	for kind, p := range providers(t) {
		t.Run(kind, func(t *testing.T) {
			box, err := p.Open(ctx, "agt_read")
			if err != nil {
				t.Fatal(err)
			}
			home, pl := hostHome(p, "agt_read"), box.Places()
			os.MkdirAll(filepath.Join(home, "d"), 0o755)
			os.WriteFile(filepath.Join(home, "d", "ok.txt"), []byte("fine"), 0o644)
			if err := os.WriteFile(filepath.Join(home, "sparse"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(filepath.Join(home, "sparse"), 64<<30); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mkfifo(filepath.Join(home, "fifo"), 0o644); err != nil {
				t.Fatal(err)
			}
			os.Symlink(outside, filepath.Join(home, "link"))
			os.Symlink(filepath.Dir(outside), filepath.Join(home, "linkdir"))
			os.Symlink("d", filepath.Join(home, "inner"))
			asAgent(t, home, "d", "d/ok.txt", "sparse", "fifo", "link", "linkdir", "inner")
			openers(t, func(t *testing.T) {
				if b, err := box.ReadFile(ctx, pl.Home+"/d/ok.txt", 16); err != nil || string(b) != "fine" {
					t.Fatalf("regular file: %q %v", b, err)
				}
				var tl *TooLargeError
				if _, err := box.ReadFile(ctx, pl.Home+"/d/ok.txt", 3); !errors.As(err, &tl) || tl.Size != 4 {
					t.Errorf("a file over the limit: %v", err)
				}
				hangGuard(t, 10*time.Second, "reading a 64 GiB sparse file", func() {
					if _, err := box.ReadFile(ctx, pl.Home+"/sparse", 16<<20); !errors.As(err, &tl) || tl.Size != 64<<30 {
						t.Errorf("sparse 64 GiB: %v", err)
					}
				})
				hangGuard(t, 10*time.Second, "reading a FIFO", func() {
					var nr *NotRegularError
					if _, err := box.ReadFile(ctx, pl.Home+"/fifo", 16<<20); !errors.As(err, &nr) || nr.Kind != "fifo" {
						t.Errorf("FIFO: %v", err)
					}
				})
				for _, name := range []string{"link", "linkdir/secret", "inner/ok.txt"} {
					var le *LinkError
					if b, err := box.ReadFile(ctx, pl.Home+"/"+name, 16<<20); !errors.As(err, &le) {
						t.Errorf("%s: %q %v, want a link refused", name, b, err)
					}
				}
			})
		})
	}
}

// TestReadFileSwappedWhileRead: a file swapped between a small one and a 64 GiB sparse one while
// it is read, again and again, is either read whole or refused by its size; nothing larger than
// the limit is ever held.
func TestReadFileSwappedWhileRead(t *testing.T) {
	ctx := context.Background()
	p := &Local{Root: t.TempDir(), BinDir: t.TempDir()}
	box, err := p.Open(ctx, "agt_swap")
	if err != nil {
		t.Fatal(err)
	}
	home := hostHome(p, "agt_swap")
	small, sparse := filepath.Join(home, ".small"), filepath.Join(home, ".sparse")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			os.WriteFile(small, []byte("%PDF small"), 0o644)
			f, _ := os.Create(sparse)
			f.Truncate(64 << 30)
			f.Close()
			src := small
			if i%2 == 1 {
				src = sparse
			}
			os.Rename(src, filepath.Join(home, "inv.pdf"))
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	seen := map[string]int{}
	for range 300 {
		b, err := box.ReadFile(ctx, box.Places().Home+"/inv.pdf", 16<<20)
		var tl *TooLargeError
		switch {
		case err == nil && string(b) == "%PDF small":
			seen["small"]++
		case errors.As(err, &tl):
			seen["refused"]++
		case errors.Is(err, fs.ErrNotExist):
			seen["missing"]++
		default:
			t.Fatalf("read while swapped: %d bytes, %v", len(b), err)
		}
	}
	t.Logf("reads: %v", seen)
}

// TestFIFOPinsNoThread: 200 parallel reads of a FIFO nobody writes all answer, and leave no thread
// of the process in open() and no thread more than a few behind.
func TestFIFOPinsNoThread(t *testing.T) {
	ctx := context.Background()
	for kind, p := range providers(t) {
		t.Run(kind, func(t *testing.T) {
			box, err := p.Open(ctx, "agt_fifo")
			if err != nil {
				t.Fatal(err)
			}
			home := hostHome(p, "agt_fifo")
			if err := syscall.Mkfifo(filepath.Join(home, "inv.pdf"), 0o644); err != nil {
				t.Fatal(err)
			}
			asAgent(t, home, "inv.pdf")
			before, _ := sandboxtest.Threads(t)
			var wg sync.WaitGroup
			errs := make(chan error, 200)
			hangGuard(t, 30*time.Second, "200 reads of a FIFO", func() {
				for range 200 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						_, err := box.ReadFile(ctx, box.Places().Home+"/inv.pdf", 16<<20)
						errs <- err
					}()
				}
				wg.Wait()
			})
			close(errs)
			for err := range errs {
				var nr *NotRegularError
				if !errors.As(err, &nr) {
					t.Fatalf("a read of a FIFO answered %v", err)
				}
			}
			// The threads that acted as the agent end with their operation.
			after, inOpen := sandboxtest.SettledThreads(t, before, 50)
			t.Logf("threads before %d, after %d, in open() %d", before, after, inOpen)
			if inOpen > 0 || after-before >= 50 {
				t.Fatalf("threads before %d, after %d, %d in open(): reads of a FIFO pin threads", before, after, inOpen)
			}
		})
	}
}

// TestHostFilesActAsTheAgent: as root, the host side writes as the agent's uid (what it creates is
// the agent's) and is refused what the agent may not touch: a root-only file in the workspace, a
// hard link to a file outside it. An upload over a hard link replaces the name, never the file.
func TestHostFilesActAsTheAgent(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: agents have host uids of their own only then")
	}
	ctx := context.Background()
	bw, ok := providers(t)["bubblewrap"].(*Bubblewrap)
	if !ok {
		t.Skip("bubblewrap is not installed")
	}
	box, err := bw.Open(ctx, "agt_uid")
	if err != nil {
		t.Fatal(err)
	}
	home := hostHome(bw, "agt_uid")
	fi, _ := os.Stat(home)
	agentUID := fi.Sys().(*syscall.Stat_t).Uid
	if agentUID == 0 {
		t.Fatal("the agent's home belongs to root")
	}
	outside := filepath.Join(home, "..", "root-only") // beside the home, same file system
	os.WriteFile(outside, []byte("root's"), 0o600)
	if err := os.Link(outside, filepath.Join(home, "hard")); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(home, "mine-not"), []byte("root's too"), 0o600)

	if _, err := box.ReadFile(ctx, Home+"/hard", 1<<20); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("read through a hard link to a root-only file: %v", err)
	}
	if _, err := box.Open(ctx, Home+"/mine-not"); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("open of a root-only file in the workspace: %v", err)
	}
	if _, err := box.WriteFrom(ctx, Home+"/hard", strings.NewReader("agent's"), 0o644, 1<<20); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(outside); string(b) != "root's" {
		t.Fatalf("the file behind the hard link changed: %q", b)
	}
	if _, err := box.WriteFrom(ctx, Home+"/new/deep/file", strings.NewReader("x"), 0o644, 1<<20); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"hard", "new", "new/deep", "new/deep/file"} {
		fi, err := os.Lstat(filepath.Join(home, n))
		if err != nil || fi.Sys().(*syscall.Stat_t).Uid != agentUID {
			t.Errorf("%s is not the agent's: %v", n, err)
		}
	}
}

// TestWriteFromLimit: a stream over the limit writes nothing (no file, no temporary file left), a
// stream at the limit is written whole, and a path through a link is refused.
func TestWriteFromLimit(t *testing.T) {
	ctx := context.Background()
	for kind, p := range providers(t) {
		t.Run(kind, func(t *testing.T) {
			box, err := p.Open(ctx, "agt_up")
			if err != nil {
				t.Fatal(err)
			}
			home, pl := hostHome(p, "agt_up"), box.Places()
			var tl *TooLargeError
			if _, err := box.WriteFrom(ctx, pl.Home+"/up/big.bin", bytes.NewReader(make([]byte, 1001)), 0o644, 1000); !errors.As(err, &tl) {
				t.Fatalf("over the limit: %v", err)
			}
			if left, _ := os.ReadDir(filepath.Join(home, "up")); len(left) != 0 {
				t.Fatalf("a refused upload left %v", left)
			}
			if n, err := box.WriteFrom(ctx, pl.Home+"/up/big.bin", bytes.NewReader(make([]byte, 1000)), 0o644, 1000); err != nil || n != 1000 {
				t.Fatalf("at the limit: %d %v", n, err)
			}
			outside := t.TempDir()
			os.Symlink(outside, filepath.Join(home, "out"))
			asAgent(t, home, "out")
			openers(t, func(t *testing.T) {
				var le *LinkError
				if _, err := box.WriteFrom(ctx, pl.Home+"/out/x", strings.NewReader("x"), 0o644, 10); !errors.As(err, &le) {
					t.Errorf("write through a linked folder: %v", err)
				}
				if _, err := box.WriteFrom(ctx, pl.Home+"/out/sub/x", strings.NewReader("x"), 0o644, 10); !errors.As(err, &le) {
					t.Errorf("write under a linked folder: %v", err)
				}
			})
			if left, _ := os.ReadDir(outside); len(left) != 0 {
				t.Fatalf("a write through a link reached %v", left)
			}
		})
	}
}

// TestOpenListsAndStreams: Open lists a folder (a link described, never followed; a FIFO named)
// and streams a file; a FIFO or a link is refused at once.
func TestOpenListsAndStreams(t *testing.T) {
	ctx := context.Background()
	for kind, p := range providers(t) {
		t.Run(kind, func(t *testing.T) {
			box, err := p.Open(ctx, "agt_open")
			if err != nil {
				t.Fatal(err)
			}
			home, pl := hostHome(p, "agt_open"), box.Places()
			os.MkdirAll(filepath.Join(home, "screens"), 0o755)
			os.WriteFile(filepath.Join(home, "screens", "latest.jpg"), []byte("\xff\xd8\xff\xe0jpeg"), 0o644)
			os.Symlink("/etc/passwd", filepath.Join(home, "screens", "pw"))
			syscall.Mkfifo(filepath.Join(home, "screens", "pipe"), 0o644)
			asAgent(t, home, "screens", "screens/latest.jpg", "screens/pw", "screens/pipe")
			n, err := box.Open(ctx, pl.Home+"/screens")
			if err != nil || !n.Dir {
				t.Fatalf("open folder: %+v %v", n, err)
			}
			got := map[string]Entry{}
			for _, e := range n.Entries {
				got[e.Name] = e
			}
			if got["latest.jpg"].Type != "file" || got["latest.jpg"].Size != 8 || got["pw"].Type != "link" || got["pw"].Target != "/etc/passwd" || got["pipe"].Type != "fifo" {
				t.Fatalf("entries %+v", n.Entries)
			}
			n, err = box.Open(ctx, pl.Home+"/screens/latest.jpg")
			if err != nil || n.Dir || n.Size != 8 {
				t.Fatalf("open file: %+v %v", n, err)
			}
			b, _ := io.ReadAll(n)
			n.Close()
			if string(b) != "\xff\xd8\xff\xe0jpeg" {
				t.Fatalf("streamed %q", b)
			}
			hangGuard(t, 10*time.Second, "opening a FIFO", func() {
				var nr *NotRegularError
				if _, err := box.Open(ctx, pl.Home+"/screens/pipe"); !errors.As(err, &nr) {
					t.Errorf("FIFO: %v", err)
				}
			})
			var le *LinkError
			if _, err := box.Open(ctx, pl.Home+"/screens/pw"); !errors.As(err, &le) {
				t.Errorf("link: %v", err)
			}
		})
	}
}

// tarball builds a tar stream from entries.
func tarball(t testing.TB, entries ...*tar.Header) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range entries {
		if h.Typeflag == tar.TypeReg && h.Size == 0 {
			h.Size = int64(len(h.Name))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			tw.Write(bytes.Repeat([]byte("x"), int(h.Size)))
		}
	}
	tw.Close()
	return buf.Bytes()
}

func dir(name string) *tar.Header { return &tar.Header{Name: name, Typeflag: tar.TypeDir, Mode: 0o755} }
func file(name string) *tar.Header {
	return &tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644}
}
func symlink(name, to string) *tar.Header {
	return &tar.Header{Name: name, Typeflag: tar.TypeSymlink, Linkname: to, Mode: 0o777}
}

// TestImportRefusesAndWritesNothing: an archive with a ../ name, an absolute name, a link that
// leaves the target (absolute or relative), a hard link out, a FIFO, a device, or a file written
// through a link it made is refused whole, naming the entry, and leaves nothing behind; a good one
// (a repository with its .git, an executable, links inside) lands in the new folder.
func TestImportRefusesAndWritesNothing(t *testing.T) {
	ctx := context.Background()
	victim := filepath.Join(t.TempDir(), "victim")
	for kind, p := range providers(t) {
		t.Run(kind, func(t *testing.T) {
			box, err := p.Open(ctx, "agt_imp")
			if err != nil {
				t.Fatal(err)
			}
			home, pl := hostHome(p, "agt_imp"), box.Places()
			os.MkdirAll(filepath.Join(home, "repos"), 0o755)
			os.Symlink(filepath.Dir(victim), filepath.Join(home, "repos", "evil"))
			asAgent(t, home, "repos", "repos/evil")
			good := []*tar.Header{dir("./"), dir("src/"), file("src/main.go"), {Name: "run.sh", Typeflag: tar.TypeReg, Mode: 0o755, Size: 3},
				dir(".git/"), dir(".git/objects/"), file(".git/HEAD"), symlink("latest", "src/main.go"), symlink("src/up", "../run.sh"),
				{Name: "src/again.go", Typeflag: tar.TypeLink, Linkname: "src/main.go"}}
			for _, tc := range []struct {
				name    string
				entries []*tar.Header
				says    string
			}{
				{"dotdot", append(good[:3:3], file("../escape")), `"../escape" leaves the target folder`},
				{"dotdot inside", append(good[:3:3], file("src/../../escape")), "leaves the target folder"},
				{"absolute", append(good[:3:3], file("/tmp/abs")), "is an absolute path"},
				{"absolute link", append(good[:3:3], symlink("pw", "/etc/passwd")), "link to the absolute path /etc/passwd"},
				{"link out", append(good[:3:3], symlink("src/up", "../../../..")), "leaves the imported folder"},
				{"hard link out", append(good[:3:3], &tar.Header{Name: "h", Typeflag: tar.TypeLink, Linkname: "../../etc/passwd"}), "hard link to ../../etc/passwd"},
				{"hard link absolute", append(good[:3:3], &tar.Header{Name: "h", Typeflag: tar.TypeLink, Linkname: "/etc/passwd"}), "hard link to /etc/passwd"},
				{"fifo", append(good[:3:3], &tar.Header{Name: "p", Typeflag: tar.TypeFifo, Mode: 0o644}), "is a FIFO"},
				{"device", append(good[:3:3], &tar.Header{Name: "null", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 3, Mode: 0o666}), "is a device file"},
				{"through its own link", append(good[:3:3], symlink("s", "src"), file("s/x")), "passes through a link"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					_, err := box.Import(ctx, pl.Home+"/repos/proj", bytes.NewReader(tarball(t, tc.entries...)), 1<<20)
					var ie *ImportError
					if !errors.As(err, &ie) || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), "nothing was written") {
						t.Fatalf("import: %v, want refused saying %q", err, tc.says)
					}
					left, _ := os.ReadDir(filepath.Join(home, "repos"))
					if len(left) != 1 || left[0].Name() != "evil" {
						t.Fatalf("a refused import left %v", left)
					}
				})
			}
			// Into a folder through a link the agent planted: refused, nothing outside.
			if _, err := box.Import(ctx, pl.Home+"/repos/evil/proj", bytes.NewReader(tarball(t, good...)), 1<<20); err == nil {
				t.Fatal("an import through a planted link was allowed")
			}
			if left, _ := os.ReadDir(filepath.Dir(victim)); len(left) != 0 {
				t.Fatalf("an import reached outside the workspace: %v", left)
			}
			var tl *TooLargeError
			if _, err := box.Import(ctx, pl.Home+"/repos/proj", bytes.NewReader(tarball(t, dir("a/"), &tar.Header{Name: "a/big", Typeflag: tar.TypeReg, Mode: 0o644, Size: 5000})), 4096); !errors.As(err, &tl) {
				t.Fatalf("over the unpacked limit: %v", err)
			}
			got, err := box.Import(ctx, pl.Home+"/repos/proj", bytes.NewReader(tarball(t, good...)), 1<<20)
			if err != nil || got.Files != 3 || got.Dirs != 3 || got.Links != 3 {
				t.Fatalf("good import: %+v %v", got, err)
			}
			root := filepath.Join(home, "repos", "proj")
			if fi, err := os.Stat(filepath.Join(root, "run.sh")); err != nil || fi.Mode().Perm() != 0o755 {
				t.Errorf("run.sh: %v %v", fi, err)
			}
			if to, _ := os.Readlink(filepath.Join(root, "src", "up")); to != "../run.sh" {
				t.Errorf("src/up -> %q", to)
			}
			a, _ := os.Stat(filepath.Join(root, "src", "main.go"))
			b, _ := os.Stat(filepath.Join(root, "src", "again.go"))
			if !os.SameFile(a, b) {
				t.Error("the hard link inside the archive was not made")
			}
			if _, err := box.Import(ctx, pl.Home+"/repos/proj", bytes.NewReader(tarball(t, good...)), 1<<20); !errors.Is(err, fs.ErrExist) {
				t.Errorf("into a folder that holds files: %v", err)
			}
			os.Mkdir(filepath.Join(home, "repos", "empty"), 0o755)
			asAgent(t, home, "repos/empty")
			if _, err := box.Import(ctx, pl.Home+"/repos/empty", bytes.NewReader(tarball(t, good...)), 1<<20); err != nil {
				t.Errorf("into an empty folder: %v", err)
			}
		})
	}
}
