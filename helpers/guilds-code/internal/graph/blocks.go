package graph

import (
	"bytes"

	"github.com/cespare/xxhash/v2"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/graph/codec"
)

// Format names the encoding of files' blocks, which the graph file and the parse worker's records
// share; it opens every graph file, and its last byte is the version.
const Format = "GRAFT\x00\x25"

// MinSymBytes is the least an encoded symbol takes, which bounds a stored symbol count.
const MinSymBytes = 10

// BloomBits is the size of each file's filter of call site names.
const BloomBits = 512

// Bloom is a file's filter of call site names.
type Bloom [BloomBits / 64]uint64

// Blocks is a file as the store and the parse worker hold it: its symbols, call sites and imports
// encoded (decoded on first use by Syms, LoadRefs and Imps), the filter of its call site names, and
// where the store read them.
type Blocks struct {
	Syms   []byte // encoded symbols
	NSyms  int    // how many symbols Syms holds
	At     int32  // 1 + its index in the graph file it was read from, 0 when parsed
	Refs   []byte // encoded call sites
	SymOff int64  // where Syms lies in the blocks file it was read from, 0 when parsed
	Imps   []byte // encoded imports (alias, path, name each)
	NImps  int    // how many imports Imps holds
	RefOff int64  // where Refs lies in that blocks file
	Bloom  Bloom  // filter of call site names
}

// HashContent is XXH64 of a file's content: stable across processes, and at about 20 GB/s next to
// FNV-1a's 0.9 GB/s it costs nothing next to parsing.
func HashContent(b []byte) uint64 { return xxhash.Sum64(b) }

// Pack encodes a freshly parsed file's symbols and call sites into the blocks a store writes (and the
// filter of call site names), as a file read from a parse worker holds them, and drops the decoded
// forms: Syms and LoadRefs decode them again on first use. scratch is the caller's encoding buffer,
// reused across files so that each block is allocated once at its final size.
func (f *File) Pack(scratch *[]byte) {
	*scratch = AppendSyms((*scratch)[:0], f.Symbols)
	f.Blocks.Syms, f.Blocks.NSyms = nil, len(f.Symbols)
	if len(*scratch) > 0 {
		f.Blocks.Syms = bytes.Clone(*scratch)
	}
	f.Blocks.Bloom = BloomOf(f.Refs)
	*scratch = AppendRefs((*scratch)[:0], f.Refs)
	f.Blocks.Refs = bytes.Clone(*scratch)
	f.Symbols, f.Refs = nil, nil
}

// AppendSyms appends the block of syms to dst.
func AppendSyms(dst []byte, syms []Symbol) []byte {
	e := codec.Encoder{Buf: dst}
	for i := range syms {
		s := &syms[i]
		e.Str(s.Name)
		e.Buf = append(e.Buf, byte(s.Kind))
		e.Str(s.Container)
		e.UV(uint64(s.Start))
		e.UV(uint64(s.End - s.Start))
		e.Str(s.Sig)
		e.Str(s.Doc)
		e.UV(uint64(s.Refs))
		e.V(int64(s.Parent))
		e.UV(uint64(len(s.Locals)))
		for _, l := range s.Locals {
			e.Str(l.Name)
			e.Str(l.Type)
			e.UV(uint64(l.Line))
		}
	}
	return e.Buf
}

// DecodeSyms reads n symbols from a block, checking every field an answer relies on.
func DecodeSyms(blob []byte, n int) ([]Symbol, error) {
	d := codec.Decoder{Buf: blob}
	syms := make([]Symbol, n)
	for j := 0; j < n && d.Err == nil; j++ {
		s := &syms[j]
		s.Name = d.Str()
		s.Kind = Kind(d.Byte())
		s.Container = d.Str()
		s.Start = d.U32()
		s.End = s.Start + d.U32()
		s.Sig = d.Str()
		s.Doc = d.Str()
		s.Refs = d.U32()
		s.Parent = int32(d.V())
		if s.Parent < -1 || int(s.Parent) >= j || s.Kind > KindImpl {
			d.Fail("symbol")
		}
		if nl := d.Count(2); nl > 0 {
			s.Locals = make([]Local, nl)
			for k := range s.Locals {
				s.Locals[k] = Local{Name: d.Str(), Type: d.Str(), Line: d.U32()}
			}
		}
	}
	if d.Err == nil && d.Off != len(blob) {
		d.Fail("symbol block length")
	}
	return syms, d.Err
}

// SymNames calls fn with each symbol's name in a block without decoding the rest.
func SymNames(blob []byte, n int, fn func(int, string)) {
	d := codec.Decoder{Buf: blob}
	for j := 0; j < n && d.Err == nil; j++ {
		name := d.Str()
		d.Byte()
		d.Skip()
		d.UV()
		d.UV()
		d.Skip()
		d.Skip()
		d.UV()
		d.V()
		for nl := d.Count(2); nl > 0; nl-- {
			d.Skip()
			d.Skip()
			d.UV()
		}
		if d.Err == nil {
			fn(j, name)
		}
	}
}

// EachSym calls fn with each symbol's index, name, container, doc line and reference count, read
// where they are stored when the symbols are not decoded; it allocates nothing.
func (f *File) EachSym(fn func(si int, name, container, doc string, refs uint32)) {
	if f.Symbols != nil || f.Blocks.Syms == nil {
		for i := range f.Symbols {
			s := &f.Symbols[i]
			fn(i, s.Name, s.Container, s.Doc, s.Refs)
		}
		return
	}
	d := codec.Decoder{Buf: f.Blocks.Syms}
	for j := 0; j < f.Blocks.NSyms && d.Err == nil; j++ {
		name := d.Str()
		d.Byte()
		container := d.Str()
		d.UV()
		d.UV()
		d.Skip()
		doc := d.Str()
		refs := d.U32()
		d.V()
		for nl := d.Count(2); nl > 0; nl-- {
			d.Skip()
			d.Skip()
			d.UV()
		}
		if d.Err == nil {
			fn(j, name, container, doc, refs)
		}
	}
}

// ReadImports passes over a count and that many encoded imports, returning their bytes and the count.
func ReadImports(d *codec.Decoder) ([]byte, int) {
	n := d.Count(3)
	start := d.Off
	for j := 0; j < 3*n && d.Err == nil; j++ {
		d.Skip()
	}
	if d.Err != nil {
		return nil, 0
	}
	return d.Buf[start:d.Off:d.Off], n
}

// AppendImports writes the file's imports as ReadImports reads them, from their encoded form when
// they were never decoded.
func (f *File) AppendImports(e *codec.Encoder) {
	if f.Imports == nil && f.Blocks.Imps != nil {
		e.UV(uint64(f.Blocks.NImps))
		e.Buf = append(e.Buf, f.Blocks.Imps...)
		return
	}
	e.UV(uint64(len(f.Imports)))
	for _, im := range f.Imports {
		e.Str(im.Alias)
		e.Str(im.Path)
		e.Str(im.Name)
	}
}

// Imps returns the file's imports, decoding them on first use.
func (f *File) Imps() []Import {
	if f.Imports != nil || f.Blocks.NImps == 0 {
		return f.Imports
	}
	d := codec.Decoder{Buf: f.Blocks.Imps}
	imps := make([]Import, f.Blocks.NImps)
	for j := range imps {
		imps[j] = Import{Alias: d.Str(), Path: d.Str(), Name: d.Str()}
	}
	if d.Err != nil {
		imps = []Import{}
	}
	f.Imports = imps
	return imps
}

// Syms returns the file's symbols, decoding them on first use; a damaged block reads as unnamed
// top-level symbols so that stored indexes into it stay valid.
func (f *File) Syms() []Symbol {
	if f.Symbols != nil || f.Blocks.NSyms == 0 {
		return f.Symbols
	}
	syms, err := DecodeSyms(f.Blocks.Syms, f.Blocks.NSyms)
	if err != nil {
		for i := range syms {
			syms[i] = Symbol{Parent: -1}
		}
	}
	f.Symbols = syms
	return syms
}

// SymCount is how many symbols the file has, without decoding them.
func (f *File) SymCount() int {
	if f.Symbols != nil || f.Blocks.Syms == nil {
		return len(f.Symbols)
	}
	return f.Blocks.NSyms
}

// AppendRefs appends the block of refs (sorted by line) to dst.
func AppendRefs(dst []byte, refs []Ref) []byte {
	e := codec.Encoder{Buf: dst}
	e.UV(uint64(len(refs)))
	var last uint32
	for _, r := range refs {
		e.Str(r.Name)
		e.Str(r.Recv)
		v := uint64(0)
		if r.Value {
			v = 1
		}
		e.UV(uint64(r.Line-last)<<1 | v) // refs are sorted by line; the low bit says a value
		last = r.Line
		e.V(int64(r.From))
	}
	return e.Buf
}

// NameHash is FNV-1a of a name: the hash of the name index and of the call site filters.
func NameHash(name string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(name); i++ {
		h ^= uint64(name[i])
		h *= 1099511628211
	}
	return h
}

func bloomHashes(name string) (uint32, uint32) {
	h := NameHash(name)
	return uint32(h) % BloomBits, uint32(h>>32) % BloomBits
}

// BloomOf is the filter of the call sites' names.
func BloomOf(refs []Ref) Bloom {
	var b Bloom
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
	return f.Blocks.Bloom[h1/64]&(1<<(h1%64)) != 0 && f.Blocks.Bloom[h2/64]&(1<<(h2%64)) != 0
}

// LoadRefs decodes the file's call sites on first use; a damaged block reads as none.
func (f *File) LoadRefs() []Ref {
	if f.Refs != nil || f.Blocks.Refs == nil {
		return f.Refs
	}
	d := codec.Decoder{Buf: f.Blocks.Refs}
	nr := d.Count(4)
	refs := make([]Ref, nr)
	var line uint32
	nsyms := f.SymCount()
	for j := 0; j < nr && d.Err == nil; j++ {
		r := &refs[j]
		r.Name = d.Str()
		r.Recv = d.Str()
		dl := d.UV()
		if dl>>1 > 1<<31 {
			d.Fail("line")
		}
		line += uint32(dl >> 1)
		r.Line, r.Value = line, dl&1 == 1
		r.From = int32(d.V())
		if r.From < -1 || int(r.From) >= nsyms {
			d.Fail("reference")
		}
	}
	if d.Err != nil || d.Off != len(d.Buf) {
		refs = []Ref{}
	}
	f.Refs = refs
	return refs
}
