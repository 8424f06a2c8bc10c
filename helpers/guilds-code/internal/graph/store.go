package graph

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unsafe"
)

// magic opens every graph file; the last byte is the format version.
const magic = "GRAFT\x00\x03"

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
		e.uv(uint64(len(f.Refs)))
		var last uint32
		for _, r := range f.Refs {
			e.str(r.Name)
			e.str(r.Recv)
			e.uv(uint64(r.Line - last)) // refs are sorted by line
			last = r.Line
			e.v(int64(r.From))
		}
		e.uv(uint64(len(f.Imports)))
		for _, im := range f.Imports {
			e.str(im.Alias)
			e.str(im.Path)
			e.str(im.Name)
		}
	}
	return e.buf
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
		nr := d.count(4)
		f.Refs = make([]Ref, nr)
		var line uint32
		for j := 0; j < nr && d.err == nil; j++ {
			r := &f.Refs[j]
			r.Name = d.str()
			r.Recv = d.str()
			line += d.u32()
			r.Line = line
			r.From = int32(d.v())
			if r.From < -1 || int(r.From) >= ns {
				d.fail("reference")
			}
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
