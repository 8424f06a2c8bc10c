package graph

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"unsafe"
)

// mapFile maps a file into memory read-only. Graph and blocks files are only ever replaced by rename
// or appended to, never written in place, so the mapping stays valid for the life of the process.
func mapFile(path string) ([]byte, error) {
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

// readGraph maps a graph file and the blocks file it names (nil when its blocks are inside it).
func readGraph(path string) (buf, blocks []byte, err error) {
	buf, err = mapFile(path)
	if err != nil {
		return nil, nil, err
	}
	name, _, err := graphHeader(buf)
	if err != nil || name == "" {
		return buf, nil, err
	}
	blocks, err = mapFile(filepath.Join(filepath.Dir(path), name))
	if err != nil {
		return nil, nil, fmt.Errorf("%w: its blocks file: %v", errCorrupt, err)
	}
	if !bytes.HasPrefix(blocks, []byte(blocksMagic)) {
		return nil, nil, fmt.Errorf("%w: blocks file %s has no header", errCorrupt, name)
	}
	return buf, blocks, nil
}

// graphHeader reads the name of a graph file's blocks file ("" when they are inside it) and where its table may start.
func graphHeader(buf []byte) (string, int, error) {
	hdr := len(magic) + 1
	if len(buf) < hdr+16 || string(buf[:len(magic)]) != magic || buf[len(magic)] > 1 {
		return "", 0, fmt.Errorf("%w: unknown header", errCorrupt)
	}
	d := decoder{buf: buf[:len(buf)-16], off: hdr}
	name := d.str()
	if d.err != nil || name != "" && (!strings.HasPrefix(name, "blocks-") || strings.ContainsAny(name, "/\x00") || name == "." || name == "..") {
		return "", 0, fmt.Errorf("%w: bad blocks file name", errCorrupt)
	}
	return name, d.off, nil
}

// magic opens every graph file; the last byte is the format version.
const magic = "GRAFT\x00\x0b"

// blocksMagic opens every blocks file, so no block starts at offset 0.
const blocksMagic = "GRAFTB\x00\x0b"

// encode returns the graph's files in the compact on-disk form with the blocks inside (see encodeTo).
func encode(files []*File, counted bool) []byte {
	var b bytes.Buffer
	_ = encodeTo(&b, nil, "", files, counted, nameIndex{}, 0)
	return b.Bytes()
}

// blockSink takes the symbol and call site blocks of a graph being written into its blocks file.
type blockSink struct {
	e     encoder // the blocks written by this store, flushed to the blocks file
	base  int64   // offset in the blocks file of the first byte e writes
	reuse bool    // blocks read from this blocks file (symOff, refOff) keep their place
	live  int64   // bytes of blocks the table refers to
	fresh int64   // bytes written by this store
}

// put stores a block and returns its offset in the blocks file.
func (s *blockSink) put(b []byte) int64 {
	off := s.base + int64(s.e.pos())
	s.e.raw(b)
	s.live += int64(len(b))
	s.fresh += int64(len(b))
	return off
}

// encodeTo writes the graph's files in the compact on-disk form; counted says whether the symbols'
// reference counts are current. prev is the name index of the table of prevFiles files the graph was
// read from: files carried over from it unchanged keep their entries, so only changed files' names
// are read again.
//
// Layout: header (with the blocks file's name, "" when the blocks follow in the same file); every
// file's symbol and call site blocks, decoded only when a query touches them; the file table (path,
// language, size, mtime, hash, package, imports, block places and a filter of call site names) in
// one contiguous stretch, so reading it touches few pages; a hash table from symbol name to its
// definitions, so a query finds a name without reading every symbol; a footer with the table's and
// the index's offsets. With bs set the blocks go to bs's blocks file instead, and blocks already
// there are referred to, not written again: a refresh that changed one file appends that file's
// blocks and rewrites only the table and the index.
func encodeTo(w io.Writer, bs *blockSink, blocksName string, files []*File, counted bool, prev nameIndex, prevFiles int) error {
	e := encoder{w: w, buf: make([]byte, 0, 1<<16)}
	e.buf = append(e.buf, magic...)
	if counted {
		e.buf = append(e.buf, 1)
	} else {
		e.buf = append(e.buf, 0)
	}
	e.str(blocksName)
	put := func(b []byte) int64 { off := e.pos(); e.raw(b); return int64(off) }
	if bs != nil {
		put = bs.put
	}
	// Files read from prev keep their entries there, moved to their new index; the others are read again.
	moved := make([]int32, prevFiles)
	for i := range moved {
		moved[i] = -1
	}
	incremental := prev.nb > 0
	for fi, f := range files {
		if incremental && f.at > 0 && int(f.at) <= prevFiles && moved[f.at-1] < 0 {
			moved[f.at-1] = int32(fi)
		}
	}
	names := nameTable{ids: make(map[string][]SymID, 1<<8)}
	// The blocks first, so that the table read on every call sits in one contiguous stretch.
	type place struct {
		symOff, refOff int64
		symLen, refLen int
		nsyms          int
	}
	places := make([]place, len(files))
	for fi, f := range files {
		carried := incremental && f.at > 0 && int(f.at) <= prevFiles && moved[f.at-1] == int32(fi)
		pl := &places[fi]
		if f.Symbols != nil || f.symBlob == nil {
			if !carried {
				for si := range f.Symbols {
					names.add(f.Symbols[si].Name, SymID{int32(fi), int32(si)})
				}
			}
			pl.nsyms = len(f.Symbols)
			blob := encodeSyms(f.Symbols)
			pl.symOff, pl.symLen = put(blob), len(blob)
		} else {
			if !carried {
				symNames(f.symBlob, f.nsyms, func(si int, name string) { names.add(name, SymID{int32(fi), int32(si)}) })
			}
			pl.nsyms = f.nsyms
			pl.symLen = len(f.symBlob)
			if bs != nil && bs.reuse && f.symOff > 0 {
				pl.symOff = f.symOff
				bs.live += int64(pl.symLen)
			} else {
				pl.symOff = put(f.symBlob)
			}
		}
		// Call sites go in a block of their own, behind a filter of their names, so a query reads
		// only the blocks of files that may hold the name it looks for.
		if f.Refs != nil || f.refBlob == nil {
			f.bloom = bloomOf(f.Refs)
			f.refBlob = encodeRefs(f.Refs)
			f.refOff = 0
		}
		pl.refLen = len(f.refBlob)
		if bs != nil && bs.reuse && f.refOff > 0 {
			pl.refOff = f.refOff
			bs.live += int64(pl.refLen)
		} else {
			pl.refOff = put(f.refBlob)
		}
	}
	if bs != nil && bs.e.flush() != nil {
		return fmt.Errorf("write blocks: %w", bs.e.err)
	}
	tableAt := e.pos()
	e.uv(uint64(len(files)))
	for fi, f := range files {
		pl := &places[fi]
		e.str(f.Path)
		e.str(f.Lang)
		e.v(f.Size)
		e.v(f.Mtime)
		e.buf = binary.LittleEndian.AppendUint64(e.buf, f.Hash)
		e.str(f.Pkg)
		e.str(f.Crash)
		e.uv(uint64(pl.nsyms))
		e.uv(uint64(pl.symOff))
		e.uv(uint64(pl.symLen))
		for _, w := range f.bloom {
			e.buf = binary.LittleEndian.AppendUint64(e.buf, w)
		}
		e.uv(uint64(pl.refOff))
		e.uv(uint64(pl.refLen))
		if f.Imports == nil && f.impBlob != nil {
			e.uv(uint64(f.nimps))
			e.buf = append(e.buf, f.impBlob...)
		} else {
			e.uv(uint64(len(f.Imports)))
			for _, im := range f.Imports {
				e.str(im.Alias)
				e.str(im.Path)
				e.str(im.Name)
			}
		}
		if len(e.buf) >= 1<<16 {
			e.flush()
		}
	}
	indexAt := e.pos()
	footer := func() error {
		e.buf = binary.LittleEndian.AppendUint64(e.buf, uint64(tableAt))
		e.buf = binary.LittleEndian.AppendUint64(e.buf, uint64(indexAt))
		return e.flush()
	}
	// The index holds at most the names carried over plus the names read again.
	iw := newIndexWriter(&e, prev.count+len(names.order))
	if incremental {
		if !names.merge(prev, moved, iw) {
			return errIndexDamaged
		}
	} else {
		names.encode(iw)
	}
	iw.finish()
	if err := footer(); err != nil {
		return err
	}
	if bs != nil {
		// The files now live where this store put them: a later store in this process refers to them there.
		for fi, f := range files {
			f.at, f.symOff, f.refOff = int32(fi+1), places[fi].symOff, places[fi].refOff
		}
	}
	return nil
}

// errIndexDamaged reports an old name index that could not be carried over; the store is made again without it.
var errIndexDamaged = errors.New("the stored name index is damaged")

// minSymBytes is the least an encoded symbol takes, which bounds a stored symbol count.
const minSymBytes = 10

// pack encodes a freshly parsed file's symbols and call sites into the blocks a store writes (and the
// filter of call site names), as a file read from a parse worker holds them, and drops the decoded
// forms: Syms and LoadRefs decode them again on first use. scratch is the caller's encoding buffer,
// reused across files so that each block is allocated once at its final size.
func (f *File) pack(scratch *[]byte) {
	*scratch = appendSyms((*scratch)[:0], f.Symbols)
	f.symBlob, f.nsyms = nil, len(f.Symbols)
	if len(*scratch) > 0 {
		f.symBlob = bytes.Clone(*scratch)
	}
	f.bloom = bloomOf(f.Refs)
	*scratch = appendRefs((*scratch)[:0], f.Refs)
	f.refBlob = bytes.Clone(*scratch)
	f.Symbols, f.Refs = nil, nil
}

func encodeSyms(syms []Symbol) []byte { return appendSyms(nil, syms) }

// appendSyms appends the block of syms to dst.
func appendSyms(dst []byte, syms []Symbol) []byte {
	e := encoder{buf: dst}
	for i := range syms {
		s := &syms[i]
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
	return e.buf
}

// decodeSyms reads n symbols from a block, checking every field an answer relies on.
func decodeSyms(blob []byte, n int) ([]Symbol, error) {
	d := decoder{buf: blob}
	syms := make([]Symbol, n)
	for j := 0; j < n && d.err == nil; j++ {
		s := &syms[j]
		s.Name = d.str()
		s.Kind = Kind(d.byte())
		s.Container = d.str()
		s.Start = d.u32()
		s.End = s.Start + d.u32()
		s.Sig = d.str()
		s.Doc = d.str()
		s.Refs = d.u32()
		s.Parent = int32(d.v())
		if s.Parent < -1 || int(s.Parent) >= j || s.Kind > KindImpl {
			d.fail("symbol")
		}
		if nl := d.count(2); nl > 0 {
			s.Locals = make([]Local, nl)
			for k := range s.Locals {
				s.Locals[k] = Local{Name: d.str(), Type: d.str()}
			}
		}
	}
	if d.err == nil && d.off != len(blob) {
		d.fail("symbol block length")
	}
	return syms, d.err
}

// symNames calls fn with each symbol's name in a block without decoding the rest.
func symNames(blob []byte, n int, fn func(int, string)) {
	d := decoder{buf: blob}
	for j := 0; j < n && d.err == nil; j++ {
		name := d.str()
		d.byte()
		d.skip()
		d.uv()
		d.uv()
		d.skip()
		d.skip()
		d.uv()
		d.v()
		for nl := d.count(2); nl > 0; nl-- {
			d.skip()
			d.skip()
		}
		if d.err == nil {
			fn(j, name)
		}
	}
}

// EachSym calls fn with each symbol's index, name, container, doc line and reference count, read
// where they are stored when the symbols are not decoded; it allocates nothing.
func (f *File) EachSym(fn func(si int, name, container, doc string, refs uint32)) {
	if f.Symbols != nil || f.symBlob == nil {
		for i := range f.Symbols {
			s := &f.Symbols[i]
			fn(i, s.Name, s.Container, s.Doc, s.Refs)
		}
		return
	}
	d := decoder{buf: f.symBlob}
	for j := 0; j < f.nsyms && d.err == nil; j++ {
		name := d.str()
		d.byte()
		container := d.str()
		d.uv()
		d.uv()
		d.skip()
		doc := d.str()
		refs := d.u32()
		d.v()
		for nl := d.count(2); nl > 0; nl-- {
			d.skip()
			d.skip()
		}
		if d.err == nil {
			fn(j, name, container, doc, refs)
		}
	}
}

// imports passes over a count and that many imports, returning their bytes and the count.
func (d *decoder) imports() ([]byte, int) {
	n := d.count(3)
	start := d.off
	for j := 0; j < 3*n && d.err == nil; j++ {
		d.skip()
	}
	if d.err != nil {
		return nil, 0
	}
	return d.buf[start:d.off:d.off], n
}

// Imps returns the file's imports, decoding them on first use.
func (f *File) Imps() []Import {
	if f.Imports != nil || f.nimps == 0 {
		return f.Imports
	}
	d := decoder{buf: f.impBlob}
	imps := make([]Import, f.nimps)
	for j := range imps {
		imps[j] = Import{Alias: d.str(), Path: d.str(), Name: d.str()}
	}
	if d.err != nil {
		imps = []Import{}
	}
	f.Imports = imps
	return imps
}

// Syms returns the file's symbols, decoding them on first use; a damaged block reads as unnamed
// top-level symbols so that stored indexes into it stay valid.
func (f *File) Syms() []Symbol {
	if f.Symbols != nil || f.nsyms == 0 {
		return f.Symbols
	}
	syms, err := decodeSyms(f.symBlob, f.nsyms)
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
	if f.Symbols != nil || f.symBlob == nil {
		return len(f.Symbols)
	}
	return f.nsyms
}

func encodeRefs(refs []Ref) []byte { return appendRefs(nil, refs) }

// appendRefs appends the block of refs (sorted by line) to dst.
func appendRefs(dst []byte, refs []Ref) []byte {
	e := encoder{buf: dst}
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

func nameHash(name string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(name); i++ {
		h ^= uint64(name[i])
		h *= 1099511628211
	}
	return h
}

func bloomHashes(name string) (uint32, uint32) {
	h := nameHash(name)
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
	nsyms := f.SymCount()
	for j := 0; j < nr && d.err == nil; j++ {
		r := &refs[j]
		r.Name = d.str()
		r.Recv = d.str()
		line += d.u32()
		r.Line = line
		r.From = int32(d.v())
		if r.From < -1 || int(r.From) >= nsyms {
			d.fail("reference")
		}
	}
	if d.err != nil || d.off != len(d.buf) {
		refs = []Ref{}
	}
	f.Refs = refs
	return refs
}

// nameTable collects symbol names and their definitions for the stored name index.
type nameTable struct {
	order []string
	ids   map[string][]SymID
}

func (t *nameTable) add(name string, id SymID) {
	ids, ok := t.ids[name]
	if !ok {
		t.order = append(t.order, name)
	}
	t.ids[name] = append(ids, id)
}

// indexWriter streams the entries of a name index (name, count, then file and symbol indexes) and
// then its open-addressing hash table: a power-of-two count of slots, each the 1-based offset of an
// entry (0 for empty), then how many entries there are and how many slots. Only the slots are held
// in memory, not the entries.
type indexWriter struct {
	e     *encoder
	start int      // e.pos() of the first entry
	slots []uint32 // sized for at most max entries, at most 3/4 full
	n     int      // entries written
}

// newIndexWriter starts an index of at most max entries at e's position.
func newIndexWriter(e *encoder, max int) *indexWriter {
	nb := 1
	for 3*nb < 4*max {
		nb <<= 1
	}
	return &indexWriter{e: e, start: e.pos(), slots: make([]uint32, nb)}
}

func (w *indexWriter) entry(name string, ids []SymID) {
	mask := uint64(len(w.slots) - 1)
	h := nameHash(name) & mask
	for w.slots[h] != 0 {
		h = (h + 1) & mask
	}
	w.slots[h] = uint32(w.e.pos() - w.start + 1)
	w.n++
	w.e.entry(name, ids)
	if len(w.e.buf) >= 1<<16 {
		w.e.flush()
	}
}

// finish writes the hash table and the counts.
func (w *indexWriter) finish() {
	for _, sl := range w.slots {
		w.e.buf = binary.LittleEndian.AppendUint32(w.e.buf, sl)
		if len(w.e.buf) >= 1<<16 {
			w.e.flush()
		}
	}
	w.e.buf = binary.LittleEndian.AppendUint32(w.e.buf, uint32(w.n))
	w.e.buf = binary.LittleEndian.AppendUint32(w.e.buf, uint32(len(w.slots)))
}

// encode writes every name of t.
func (t *nameTable) encode(w *indexWriter) {
	for _, name := range t.order {
		w.entry(name, t.ids[name])
	}
}

// merge writes the entries of prev with every id moved to its new file (moved[old] < 0 drops it),
// plus the names in t, walking prev's entries in order instead of hashing every symbol again. It
// reports false when prev's entries are damaged (what it wrote is then unusable).
func (t *nameTable) merge(prev nameIndex, moved []int32, w *indexWriter) bool {
	d := decoder{buf: prev.entries}
	var ids []SymID
	for d.off < len(d.buf) && d.err == nil {
		name := d.str()
		k := d.count(2)
		ids = ids[:0]
		for j := 0; j < k && d.err == nil; j++ {
			fi, si := d.uv(), d.uv()
			if fi < uint64(len(moved)) && moved[fi] >= 0 {
				ids = append(ids, SymID{moved[fi], int32(si)})
			}
		}
		if extra, ok := t.ids[name]; ok {
			ids = append(ids, extra...)
			sort.Slice(ids, func(i, j int) bool { return ids[i].F < ids[j].F || ids[i].F == ids[j].F && ids[i].S < ids[j].S })
			delete(t.ids, name)
		}
		if len(ids) == 0 || d.err != nil {
			continue
		}
		w.entry(name, ids)
	}
	if d.err != nil {
		return false
	}
	for _, name := range t.order {
		if ids, ok := t.ids[name]; ok {
			w.entry(name, ids)
		}
	}
	return true
}

func (e *encoder) entry(name string, ids []SymID) {
	e.str(name)
	e.uv(uint64(len(ids)))
	for _, id := range ids {
		e.uv(uint64(id.F))
		e.uv(uint64(id.S))
	}
}

// nameIndex reads the stored name index of a graph.
type nameIndex struct {
	slots   []byte // nb little-endian uint32 offsets
	entries []byte
	nb      int
	count   int // how many entries
}

// parseNameIndex checks the index's frame (entries, slots, entry count, slot count); entries are
// checked as they are read.
func parseNameIndex(b []byte) (nameIndex, bool) {
	if len(b) < 8 {
		return nameIndex{}, false
	}
	count, nb := binary.LittleEndian.Uint32(b[len(b)-8:]), binary.LittleEndian.Uint32(b[len(b)-4:])
	if nb == 0 || nb&(nb-1) != 0 || uint64(nb)*4 > uint64(len(b)-8) || count >= nb {
		return nameIndex{}, false
	}
	at := len(b) - 8 - 4*int(nb)
	return nameIndex{slots: b[at : len(b)-8], entries: b[:at], nb: int(nb), count: int(count)}, true
}

// lookup returns the definitions stored under name; ids outside files are dropped.
func (x nameIndex) lookup(name string, files []*File) []SymID {
	if x.nb == 0 {
		return nil
	}
	h := int(nameHash(name) & uint64(x.nb-1))
	for i := 0; i < x.nb; i++ {
		slot := (h + i) & (x.nb - 1)
		off := binary.LittleEndian.Uint32(x.slots[4*slot:])
		if off == 0 {
			return nil
		}
		d := decoder{buf: x.entries, off: int(off - 1)}
		if d.off >= len(d.buf) {
			return nil
		}
		if d.str() != name || d.err != nil {
			continue
		}
		k := d.count(2)
		ids := make([]SymID, 0, k)
		for j := 0; j < k && d.err == nil; j++ {
			fi, si := d.uv(), d.uv()
			if d.err == nil && fi < uint64(len(files)) && si < uint64(files[fi].SymCount()) {
				ids = append(ids, SymID{int32(fi), int32(si)})
			}
		}
		return ids
	}
	return nil
}

// each calls fn with every stored name.
func (x nameIndex) each(fn func(string)) {
	for slot := 0; slot < x.nb; slot++ {
		off := binary.LittleEndian.Uint32(x.slots[4*slot:])
		if off == 0 || int(off-1) >= len(x.entries) {
			continue
		}
		d := decoder{buf: x.entries, off: int(off - 1)}
		if n := d.str(); d.err == nil && n != "" {
			fn(n)
		}
	}
}

// encoder appends to buf; with w set, it hands buf and large blocks to w as it goes.
type encoder struct {
	buf     []byte
	w       io.Writer
	err     error
	flushed int // bytes handed to w so far
}

func (e *encoder) flush() error {
	if e.w != nil && e.err == nil && len(e.buf) > 0 {
		_, e.err = e.w.Write(e.buf)
		e.flushed += len(e.buf)
		e.buf = e.buf[:0]
	}
	return e.err
}

// pos is the offset in the output of the next byte.
func (e *encoder) pos() int { return e.flushed + len(e.buf) }

// raw appends b as it is; large blocks (often straight from the old file's mapping) go to w without a copy.
func (e *encoder) raw(b []byte) {
	if e.w != nil && len(b) >= 4096 {
		if e.flush() == nil {
			_, e.err = e.w.Write(b)
			e.flushed += len(b)
		}
		return
	}
	e.buf = append(e.buf, b...)
	if e.w != nil && len(e.buf) >= 1<<16 {
		e.flush()
	}
}

func (e *encoder) uv(x uint64) { e.buf = binary.AppendUvarint(e.buf, x) }
func (e *encoder) v(x int64)   { e.buf = binary.AppendVarint(e.buf, x) }
func (e *encoder) str(s string) {
	e.uv(uint64(len(s)))
	e.buf = append(e.buf, s...)
}

// blob appends a length-prefixed block (decoder.blob reads it).
func (e *encoder) blob(b []byte) {
	e.uv(uint64(len(b)))
	e.buf = append(e.buf, b...)
}

// errCorrupt reports a graph file that cannot be read; the caller rebuilds.
var errCorrupt = errors.New("graph file is corrupt")

// graphFooter reads where a graph file's table and index start, and where its footer does.
func graphFooter(buf []byte, hdr int) (tableAt, indexAt uint64, end int, err error) {
	end = len(buf) - 16
	tableAt, indexAt = binary.LittleEndian.Uint64(buf[end:]), binary.LittleEndian.Uint64(buf[end+8:])
	if tableAt < uint64(hdr) || tableAt > indexAt || indexAt > uint64(end) {
		return 0, 0, 0, fmt.Errorf("%w: bad footer", errCorrupt)
	}
	return tableAt, indexAt, end, nil
}

// readIndex maps a graph file and reads its name index alone, leaving its table unread.
func readIndex(path string) (nameIndex, error) {
	buf, err := mapFile(path)
	if err != nil {
		return nameIndex{}, err
	}
	_, hdr, err := graphHeader(buf)
	if err != nil {
		return nameIndex{}, err
	}
	_, indexAt, end, err := graphFooter(buf, hdr)
	if err != nil {
		return nameIndex{}, err
	}
	ix, ok := parseNameIndex(buf[indexAt:end])
	if !ok {
		return nameIndex{}, fmt.Errorf("%w: name index", errCorrupt)
	}
	return ix, nil
}

// decodeTable reads a graph file whose blocks are inside it (see decodeGraph).
func decodeTable(buf []byte) ([]*File, bool, nameIndex, error) { return decodeGraph(buf, nil) }

// decodeGraph reads a graph file's table of files and its name index, leaving each file's symbols
// and call sites in their blocks until a query asks (Syms, LoadRefs). blocks is the blocks file the
// graph names, nil when its blocks are inside it. Strings point into buf and blocks, which must stay
// unchanged while the result lives.
func decodeGraph(buf, blocks []byte) ([]*File, bool, nameIndex, error) {
	name, hdr, err := graphHeader(buf)
	if err != nil {
		return nil, false, nameIndex{}, err
	}
	counted := buf[len(magic)] == 1
	tableAt, indexAt, end, err := graphFooter(buf, hdr)
	if err != nil {
		return nil, false, nameIndex{}, err
	}
	// Blocks lie in the blocks file after its header, or in this file between its header and table.
	lo, hi := uint64(hdr), tableAt
	if name != "" || blocks != nil {
		if name == "" || blocks == nil {
			return nil, false, nameIndex{}, fmt.Errorf("%w: blocks file missing", errCorrupt)
		}
		lo, hi = uint64(len(blocksMagic)), uint64(len(blocks))
	} else {
		blocks = buf
	}
	d := decoder{buf: buf[:indexAt], off: int(tableAt)}
	// block returns blocks[off:off+n] when it lies in the block area, and its offset.
	block := func() ([]byte, int64) {
		off, n := d.uv(), d.uv()
		if d.err != nil {
			return nil, 0
		}
		if off < lo || off > hi || n > hi-off {
			d.fail("block")
			return nil, 0
		}
		return blocks[off : off+n : off+n], int64(off)
	}
	n := d.count(8)
	files := make([]*File, 0, n)
	slab := make([]File, n) // one allocation for the whole table
	for i := 0; i < n && d.err == nil; i++ {
		f := &slab[i]
		*f = File{Path: d.str(), Lang: d.str(), Size: d.v(), Mtime: d.v(), Hash: d.u64(), Pkg: d.str(), Crash: d.str(), at: int32(i + 1)}
		ns := d.uv()
		f.symBlob, f.symOff = block()
		if ns > uint64(len(f.symBlob)/minSymBytes) || ns == 0 && len(f.symBlob) > 0 {
			d.fail("symbol count")
		}
		f.nsyms = int(ns)
		for k := range f.bloom {
			f.bloom[k] = d.u64()
		}
		f.refBlob, f.refOff = block()
		f.impBlob, f.nimps = d.imports()
		if d.err == nil && LangNamed(f.Lang) == nil {
			d.fail("language")
		}
		files = append(files, f)
	}
	if d.err == nil && d.off != len(d.buf) {
		d.fail("table length")
	}
	ix, ok := parseNameIndex(buf[indexAt:end])
	if d.err == nil && !ok {
		d.fail("name index")
	}
	if d.err != nil {
		return nil, false, nameIndex{}, d.err
	}
	return files, counted, ix, nil
}

// decode reads a whole graph file, every block included, and whether its reference counts are current.
func decode(buf []byte) ([]*File, bool, error) {
	files, counted, _, err := decodeTable(buf)
	if err != nil {
		return nil, false, err
	}
	for _, f := range files {
		if f.nsyms > 0 {
			syms, err := decodeSyms(f.symBlob, f.nsyms)
			if err != nil {
				return nil, false, err
			}
			f.Symbols = syms
		}
		if f.LoadRefs(); len(f.Refs) == 0 && len(f.refBlob) > 1 {
			return nil, false, fmt.Errorf("%w: bad call sites of %s", errCorrupt, f.Path)
		}
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

// blob reads a length-prefixed block without copying it.
func (d *decoder) blob() []byte {
	n := d.uv()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.buf)-d.off) {
		d.fail("block")
		return nil
	}
	b := d.buf[d.off : d.off+int(n) : d.off+int(n)]
	d.off += int(n)
	return b
}

// skip passes over a string.
func (d *decoder) skip() { d.blob() }

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
