package graph

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"syscall"
	"unsafe"
)

// readGraph maps a graph file into memory read-only. Graph files are only ever replaced by rename,
// never written in place, so the mapping stays valid for the life of the process.
func readGraph(path string) ([]byte, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() == 0 {
		return nil, nil
	}
	b, err := syscall.Mmap(int(fh.Fd()), 0, int(fi.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return os.ReadFile(path)
	}
	return b, nil
}

// magic opens every graph file; the last byte is the format version.
const magic = "GRAFT\x00\x04"

// encode writes the graph's files in the compact on-disk form; counted says whether the symbols'
// reference counts are current.
func encode(files []*File, counted bool) []byte {
	e := encoder{buf: make([]byte, 0, 1<<16)}
	e.buf = append(e.buf, magic...)
	if counted {
		e.buf = append(e.buf, 1)
	} else {
		e.buf = append(e.buf, 0)
	}
	e.uv(uint64(len(files)))
	for _, f := range files {
		e.str(f.Path)
		e.str(f.Lang)
		e.v(f.Size)
		e.v(f.Mtime)
		e.buf = binary.LittleEndian.AppendUint64(e.buf, f.Hash)
		e.str(f.Pkg)
		e.uv(uint64(len(f.Symbols)))
		for i := range f.Symbols {
			s := &f.Symbols[i]
			e.str(s.Name)
			e.buf = append(e.buf, byte(s.Kind))
			e.str(s.Container)
			e.uv(uint64(s.Start))
			e.uv(uint64(s.End - s.Start))
			e.str(s.Sig)
			e.str(s.Doc)
			e.uv(uint64(s.Refs))
			e.v(int64(s.Parent))
			e.uv(uint64(len(s.Locals)))
			for _, l := range s.Locals {
				e.str(l.Name)
				e.str(l.Type)
			}
		}
		// Call sites go in a block of their own, behind a filter of their names, so a query reads
		// only the blocks of files that may hold the name it looks for.
		if f.Refs != nil || f.refBlob == nil {
			f.bloom = bloomOf(f.Refs)
			f.refBlob = encodeRefs(f.Refs)
		}
		for _, w := range f.bloom {
			e.buf = binary.LittleEndian.AppendUint64(e.buf, w)
		}
		e.uv(uint64(len(f.refBlob)))
		e.buf = append(e.buf, f.refBlob...)
		e.uv(uint64(len(f.Imports)))
		for _, im := range f.Imports {
			e.str(im.Alias)
			e.str(im.Path)
			e.str(im.Name)
		}
	}
	return e.buf
}

func encodeRefs(refs []Ref) []byte {
	e := encoder{}
	e.uv(uint64(len(refs)))
	var last uint32
	for _, r := range refs {
		e.str(r.Name)
		e.str(r.Recv)
		e.uv(uint64(r.Line - last)) // refs are sorted by line
		last = r.Line
		e.v(int64(r.From))
	}
	return e.buf
}

// bloomBits is the size of each file's filter of call site names.
const bloomBits = 512

func bloomHashes(name string) (uint32, uint32) {
	h := uint64(14695981039346656037)
	for i := 0; i < len(name); i++ {
		h ^= uint64(name[i])
		h *= 1099511628211
	}
	return uint32(h) % bloomBits, uint32(h>>32) % bloomBits
}

func bloomOf(refs []Ref) [bloomBits / 64]uint64 {
	var b [bloomBits / 64]uint64
	for _, r := range refs {
		h1, h2 := bloomHashes(r.Name)
		b[h1/64] |= 1 << (h1 % 64)
		b[h2/64] |= 1 << (h2 % 64)
	}
	return b
}

// MayCall reports whether the file may hold a call site named name (false means it surely does not).
func (f *File) MayCall(name string) bool {
	if f.Refs != nil {
		return true
	}
	h1, h2 := bloomHashes(name)
	return f.bloom[h1/64]&(1<<(h1%64)) != 0 && f.bloom[h2/64]&(1<<(h2%64)) != 0
}

// LoadRefs decodes the file's call sites on first use; a damaged block reads as none.
func (f *File) LoadRefs() []Ref {
	if f.Refs != nil || f.refBlob == nil {
		return f.Refs
	}
	d := decoder{buf: f.refBlob}
	nr := d.count(4)
	refs := make([]Ref, nr)
	var line uint32
	for j := 0; j < nr && d.err == nil; j++ {
		r := &refs[j]
		r.Name = d.str()
		r.Recv = d.str()
		line += d.u32()
		r.Line = line
		r.From = int32(d.v())
		if r.From < -1 || int(r.From) >= len(f.Symbols) {
			d.fail("reference")
		}
	}
	if d.err != nil || d.off != len(d.buf) {
		refs = []Ref{}
	}
	f.Refs = refs
	return refs
}

type encoder struct{ buf []byte }

func (e *encoder) uv(x uint64) { e.buf = binary.AppendUvarint(e.buf, x) }
func (e *encoder) v(x int64)   { e.buf = binary.AppendVarint(e.buf, x) }
func (e *encoder) str(s string) {
	e.uv(uint64(len(s)))
	e.buf = append(e.buf, s...)
}

// errCorrupt reports a graph file that cannot be read; the caller rebuilds.
var errCorrupt = errors.New("graph file is corrupt")

// decode reads a graph file and whether its reference counts are current. Strings point into buf,
// which must stay unchanged while the result lives.
func decode(buf []byte) ([]*File, bool, error) {
	if len(buf) < len(magic)+1 || string(buf[:len(magic)]) != magic || buf[len(magic)] > 1 {
		return nil, false, fmt.Errorf("%w: unknown header", errCorrupt)
	}
	counted := buf[len(magic)] == 1
	d := decoder{buf: buf, off: len(magic) + 1}
	n := d.count(8)
	files := make([]*File, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		f := &File{Path: d.str(), Lang: d.str(), Size: d.v(), Mtime: d.v(), Hash: d.u64(), Pkg: d.str()}
		ns := d.count(8)
		f.Symbols = make([]Symbol, ns)
		for j := 0; j < ns && d.err == nil; j++ {
			s := &f.Symbols[j]
			s.Name = d.str()
			s.Kind = Kind(d.byte())
			s.Container = d.str()
			s.Start = d.u32()
			s.End = s.Start + d.u32()
			s.Sig = d.str()
			s.Doc = d.str()
			s.Refs = d.u32()
			s.Parent = int32(d.v())
			if s.Parent < -1 || int(s.Parent) >= j || s.Kind >= kindImpl {
				d.fail("symbol")
			}
			if nl := d.count(2); nl > 0 {
				s.Locals = make([]Local, nl)
				for k := range s.Locals {
					s.Locals[k] = Local{Name: d.str(), Type: d.str()}
				}
			}
		}
		for k := range f.bloom {
			f.bloom[k] = d.u64()
		}
		if n := d.count(1); d.err == nil {
			f.refBlob = d.buf[d.off : d.off+n : d.off+n]
			d.off += n
		}
		ni := d.count(3)
		f.Imports = make([]Import, ni)
		for j := 0; j < ni && d.err == nil; j++ {
			f.Imports[j] = Import{Alias: d.str(), Path: d.str(), Name: d.str()}
		}
		if LangNamed(f.Lang) == nil {
			d.fail("language")
		}
		files = append(files, f)
	}
	if d.err == nil && d.off != len(buf) {
		d.fail("trailing bytes")
	}
	if d.err != nil {
		return nil, false, d.err
	}
	return files, counted, nil
}

type decoder struct {
	buf []byte
	off int
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: bad %s at byte %d", errCorrupt, what, d.off)
	}
}

func (d *decoder) uv() uint64 {
	if d.err != nil {
		return 0
	}
	x, n := binary.Uvarint(d.buf[d.off:])
	if n <= 0 {
		d.fail("number")
		return 0
	}
	d.off += n
	return x
}

func (d *decoder) v() int64 {
	if d.err != nil {
		return 0
	}
	x, n := binary.Varint(d.buf[d.off:])
	if n <= 0 {
		d.fail("number")
		return 0
	}
	d.off += n
	return x
}

func (d *decoder) u32() uint32 {
	x := d.uv()
	if x > 1<<31 {
		d.fail("line")
		return 0
	}
	return uint32(x)
}

// count reads a length whose elements take at least min bytes each, so a bad count cannot allocate much.
func (d *decoder) count(min int) int {
	x := d.uv()
	if x > uint64(len(d.buf)-d.off)/uint64(min) {
		d.fail("count")
		return 0
	}
	return int(x)
}

func (d *decoder) byte() byte {
	if d.err != nil || d.off >= len(d.buf) {
		d.fail("byte")
		return 0
	}
	b := d.buf[d.off]
	d.off++
	return b
}

func (d *decoder) u64() uint64 {
	if d.err != nil || len(d.buf)-d.off < 8 {
		d.fail("hash")
		return 0
	}
	x := binary.LittleEndian.Uint64(d.buf[d.off:])
	d.off += 8
	return x
}

func (d *decoder) str() string {
	n := d.uv()
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.buf)-d.off) {
		d.fail("string")
		return ""
	}
	if n == 0 {
		return ""
	}
	s := unsafe.String(&d.buf[d.off], int(n))
	d.off += int(n)
	return s
}
