package store

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

	"github.com/guildsai/guilds/helpers/guilds-code/internal/graph"
	"github.com/guildsai/guilds/helpers/guilds-code/internal/graph/codec"
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
		return nil, nil, fmt.Errorf("%w: its blocks file: %v", codec.ErrCorrupt, err)
	}
	if !bytes.HasPrefix(blocks, []byte(blocksMagic)) {
		return nil, nil, fmt.Errorf("%w: blocks file %s has no header", codec.ErrCorrupt, name)
	}
	return buf, blocks, nil
}

// graphHeader reads the name of a graph file's blocks file ("" when they are inside it) and where its table may start.
func graphHeader(buf []byte) (string, int, error) {
	hdr := len(magic) + 1
	if len(buf) < hdr+16 || string(buf[:len(magic)]) != magic || buf[len(magic)] > 1 {
		return "", 0, fmt.Errorf("%w: unknown header", codec.ErrCorrupt)
	}
	d := codec.Decoder{Buf: buf[:len(buf)-16], Off: hdr}
	name := d.Str()
	if d.Err != nil || name != "" && (!strings.HasPrefix(name, "blocks-") || strings.ContainsAny(name, "/\x00") || name == "." || name == "..") {
		return "", 0, fmt.Errorf("%w: bad blocks file name", codec.ErrCorrupt)
	}
	return name, d.Off, nil
}

// magic opens every graph file; the last byte is the format version.
const magic = graph.Format

// blocksMagic opens every blocks file, so no block starts at offset 0.
const blocksMagic = "GRAFTB\x00\x0f"

// encode returns the graph's files in the compact on-disk form with the blocks inside (see encodeTo).
func encode(files []*graph.File, counted bool) []byte {
	var b bytes.Buffer
	_ = encodeTo(&b, nil, "", files, counted, nameIndex{}, 0)
	return b.Bytes()
}

// blockSink takes the symbol and call site blocks of a graph being written into its blocks file.
type blockSink struct {
	e     codec.Encoder // the blocks written by this store, flushed to the blocks file
	base  int64         // offset in the blocks file of the first byte e writes
	reuse bool          // blocks read from this blocks file (symOff, refOff) keep their place
	live  int64         // bytes of blocks the table refers to
	fresh int64         // bytes written by this store
}

// put stores a block and returns its offset in the blocks file.
func (s *blockSink) put(b []byte) int64 {
	off := s.base + int64(s.e.Pos())
	s.e.Raw(b)
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
func encodeTo(w io.Writer, bs *blockSink, blocksName string, files []*graph.File, counted bool, prev nameIndex, prevFiles int) error {
	e := codec.Encoder{W: w, Buf: make([]byte, 0, 1<<16)}
	e.Buf = append(e.Buf, magic...)
	if counted {
		e.Buf = append(e.Buf, 1)
	} else {
		e.Buf = append(e.Buf, 0)
	}
	e.Str(blocksName)
	put := func(b []byte) int64 { off := e.Pos(); e.Raw(b); return int64(off) }
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
		if incremental && f.Blocks.At > 0 && int(f.Blocks.At) <= prevFiles && moved[f.Blocks.At-1] < 0 {
			moved[f.Blocks.At-1] = int32(fi)
		}
	}
	names := nameTable{ids: make(map[string][]graph.SymID, 1<<8)}
	// The blocks first, so that the table read on every call sits in one contiguous stretch.
	type place struct {
		symOff, refOff int64
		symLen, refLen int
		nsyms          int
	}
	places := make([]place, len(files))
	for fi, f := range files {
		carried := incremental && f.Blocks.At > 0 && int(f.Blocks.At) <= prevFiles && moved[f.Blocks.At-1] == int32(fi)
		pl := &places[fi]
		if f.Symbols != nil || f.Blocks.Syms == nil {
			if !carried {
				for si := range f.Symbols {
					names.add(f.Symbols[si].Name, graph.SymID{F: int32(fi), S: int32(si)})
				}
			}
			pl.nsyms = len(f.Symbols)
			blob := graph.AppendSyms(nil, f.Symbols)
			pl.symOff, pl.symLen = put(blob), len(blob)
		} else {
			if !carried {
				graph.SymNames(f.Blocks.Syms, f.Blocks.NSyms, func(si int, name string) { names.add(name, graph.SymID{F: int32(fi), S: int32(si)}) })
			}
			pl.nsyms = f.Blocks.NSyms
			pl.symLen = len(f.Blocks.Syms)
			if bs != nil && bs.reuse && f.Blocks.SymOff > 0 {
				pl.symOff = f.Blocks.SymOff
				bs.live += int64(pl.symLen)
			} else {
				pl.symOff = put(f.Blocks.Syms)
			}
		}
		// Call sites go in a block of their own, behind a filter of their names, so a query reads
		// only the blocks of files that may hold the name it looks for.
		if f.Refs != nil || f.Blocks.Refs == nil {
			f.Blocks.Bloom = graph.BloomOf(f.Refs)
			f.Blocks.Refs = graph.AppendRefs(nil, f.Refs)
			f.Blocks.RefOff = 0
		}
		pl.refLen = len(f.Blocks.Refs)
		if bs != nil && bs.reuse && f.Blocks.RefOff > 0 {
			pl.refOff = f.Blocks.RefOff
			bs.live += int64(pl.refLen)
		} else {
			pl.refOff = put(f.Blocks.Refs)
		}
	}
	if bs != nil && bs.e.Flush() != nil {
		return fmt.Errorf("write blocks: %w", bs.e.Err)
	}
	tableAt := e.Pos()
	e.UV(uint64(len(files)))
	for fi, f := range files {
		pl := &places[fi]
		e.Str(f.Path)
		e.Str(f.Lang)
		e.V(f.Size)
		e.V(f.Mtime)
		e.Buf = binary.LittleEndian.AppendUint64(e.Buf, f.Hash)
		e.Str(f.Pkg)
		e.Str(f.Crash)
		e.UV(uint64(pl.nsyms))
		e.UV(uint64(pl.symOff))
		e.UV(uint64(pl.symLen))
		for _, w := range f.Blocks.Bloom {
			e.Buf = binary.LittleEndian.AppendUint64(e.Buf, w)
		}
		e.UV(uint64(pl.refOff))
		e.UV(uint64(pl.refLen))
		f.AppendImports(&e)
		if len(e.Buf) >= 1<<16 {
			e.Flush()
		}
	}
	indexAt := e.Pos()
	footer := func() error {
		e.Buf = binary.LittleEndian.AppendUint64(e.Buf, uint64(tableAt))
		e.Buf = binary.LittleEndian.AppendUint64(e.Buf, uint64(indexAt))
		return e.Flush()
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
			f.Blocks.At, f.Blocks.SymOff, f.Blocks.RefOff = int32(fi+1), places[fi].symOff, places[fi].refOff
		}
	}
	return nil
}

// errIndexDamaged reports an old name index that could not be carried over; the store is made again without it.
var errIndexDamaged = errors.New("the stored name index is damaged")

// nameTable collects symbol names and their definitions for the stored name index.
type nameTable struct {
	order []string
	ids   map[string][]graph.SymID
}

func (t *nameTable) add(name string, id graph.SymID) {
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
	e     *codec.Encoder
	start int      // e.Pos() of the first entry
	slots []uint32 // sized for at most max entries, at most 3/4 full
	n     int      // entries written
}

// newIndexWriter starts an index of at most max entries at e's position.
func newIndexWriter(e *codec.Encoder, max int) *indexWriter {
	nb := 1
	for 3*nb < 4*max {
		nb <<= 1
	}
	return &indexWriter{e: e, start: e.Pos(), slots: make([]uint32, nb)}
}

func (w *indexWriter) entry(name string, ids []graph.SymID) {
	mask := uint64(len(w.slots) - 1)
	h := graph.NameHash(name) & mask
	for w.slots[h] != 0 {
		h = (h + 1) & mask
	}
	w.slots[h] = uint32(w.e.Pos() - w.start + 1)
	w.n++
	writeEntry(w.e, name, ids)
	if len(w.e.Buf) >= 1<<16 {
		w.e.Flush()
	}
}

// finish writes the hash table and the counts.
func (w *indexWriter) finish() {
	for _, sl := range w.slots {
		w.e.Buf = binary.LittleEndian.AppendUint32(w.e.Buf, sl)
		if len(w.e.Buf) >= 1<<16 {
			w.e.Flush()
		}
	}
	w.e.Buf = binary.LittleEndian.AppendUint32(w.e.Buf, uint32(w.n))
	w.e.Buf = binary.LittleEndian.AppendUint32(w.e.Buf, uint32(len(w.slots)))
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
	d := codec.Decoder{Buf: prev.entries}
	var ids []graph.SymID
	for d.Off < len(d.Buf) && d.Err == nil {
		name := d.Str()
		k := d.Count(2)
		ids = ids[:0]
		for j := 0; j < k && d.Err == nil; j++ {
			fi, si := d.UV(), d.UV()
			if fi < uint64(len(moved)) && moved[fi] >= 0 {
				ids = append(ids, graph.SymID{F: moved[fi], S: int32(si)})
			}
		}
		if extra, ok := t.ids[name]; ok {
			ids = append(ids, extra...)
			sort.Slice(ids, func(i, j int) bool { return ids[i].F < ids[j].F || ids[i].F == ids[j].F && ids[i].S < ids[j].S })
			delete(t.ids, name)
		}
		if len(ids) == 0 || d.Err != nil {
			continue
		}
		w.entry(name, ids)
	}
	if d.Err != nil {
		return false
	}
	for _, name := range t.order {
		if ids, ok := t.ids[name]; ok {
			w.entry(name, ids)
		}
	}
	return true
}

func writeEntry(e *codec.Encoder, name string, ids []graph.SymID) {
	e.Str(name)
	e.UV(uint64(len(ids)))
	for _, id := range ids {
		e.UV(uint64(id.F))
		e.UV(uint64(id.S))
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

// Lookup returns the definitions stored under name; ids outside files are dropped.
func (x nameIndex) Lookup(name string, files []*graph.File) []graph.SymID {
	if x.nb == 0 {
		return nil
	}
	h := int(graph.NameHash(name) & uint64(x.nb-1))
	for i := 0; i < x.nb; i++ {
		slot := (h + i) & (x.nb - 1)
		off := binary.LittleEndian.Uint32(x.slots[4*slot:])
		if off == 0 {
			return nil
		}
		d := codec.Decoder{Buf: x.entries, Off: int(off - 1)}
		if d.Off >= len(d.Buf) {
			return nil
		}
		if d.Str() != name || d.Err != nil {
			continue
		}
		k := d.Count(2)
		ids := make([]graph.SymID, 0, k)
		for j := 0; j < k && d.Err == nil; j++ {
			fi, si := d.UV(), d.UV()
			if d.Err == nil && fi < uint64(len(files)) && si < uint64(files[fi].SymCount()) {
				ids = append(ids, graph.SymID{F: int32(fi), S: int32(si)})
			}
		}
		return ids
	}
	return nil
}

// Each calls fn with every stored name.
func (x nameIndex) Each(fn func(string)) {
	for slot := 0; slot < x.nb; slot++ {
		off := binary.LittleEndian.Uint32(x.slots[4*slot:])
		if off == 0 || int(off-1) >= len(x.entries) {
			continue
		}
		d := codec.Decoder{Buf: x.entries, Off: int(off - 1)}
		if n := d.Str(); d.Err == nil && n != "" {
			fn(n)
		}
	}
}

// graphFooter reads where a graph file's table and index start, and where its footer does.
func graphFooter(buf []byte, hdr int) (tableAt, indexAt uint64, end int, err error) {
	end = len(buf) - 16
	tableAt, indexAt = binary.LittleEndian.Uint64(buf[end:]), binary.LittleEndian.Uint64(buf[end+8:])
	if tableAt < uint64(hdr) || tableAt > indexAt || indexAt > uint64(end) {
		return 0, 0, 0, fmt.Errorf("%w: bad footer", codec.ErrCorrupt)
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
		return nameIndex{}, fmt.Errorf("%w: name index", codec.ErrCorrupt)
	}
	return ix, nil
}

// decodeTable reads a graph file whose blocks are inside it (see decodeGraph).
func decodeTable(buf []byte) ([]*graph.File, bool, nameIndex, error) { return decodeGraph(buf, nil) }

// decodeGraph reads a graph file's table of files and its name index, leaving each file's symbols
// and call sites in their blocks until a query asks (Syms, LoadRefs). blocks is the blocks file the
// graph names, nil when its blocks are inside it. Strings point into buf and blocks, which must stay
// unchanged while the result lives.
func decodeGraph(buf, blocks []byte) ([]*graph.File, bool, nameIndex, error) {
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
			return nil, false, nameIndex{}, fmt.Errorf("%w: blocks file missing", codec.ErrCorrupt)
		}
		lo, hi = uint64(len(blocksMagic)), uint64(len(blocks))
	} else {
		blocks = buf
	}
	d := codec.Decoder{Buf: buf[:indexAt], Off: int(tableAt)}
	// block returns blocks[off:off+n] when it lies in the block area, and its offset.
	block := func() ([]byte, int64) {
		off, n := d.UV(), d.UV()
		if d.Err != nil {
			return nil, 0
		}
		if off < lo || off > hi || n > hi-off {
			d.Fail("block")
			return nil, 0
		}
		return blocks[off : off+n : off+n], int64(off)
	}
	n := d.Count(8)
	files := make([]*graph.File, 0, n)
	slab := make([]graph.File, n) // one allocation for the whole table
	for i := 0; i < n && d.Err == nil; i++ {
		f := &slab[i]
		*f = graph.File{Path: d.Str(), Lang: d.Str(), Size: d.V(), Mtime: d.V(), Hash: d.U64(), Pkg: d.Str(), Crash: d.Str(), Blocks: graph.Blocks{At: int32(i + 1)}}
		ns := d.UV()
		f.Blocks.Syms, f.Blocks.SymOff = block()
		if ns > uint64(len(f.Blocks.Syms)/graph.MinSymBytes) || ns == 0 && len(f.Blocks.Syms) > 0 {
			d.Fail("symbol count")
		}
		f.Blocks.NSyms = int(ns)
		for k := range f.Blocks.Bloom {
			f.Blocks.Bloom[k] = d.U64()
		}
		f.Blocks.Refs, f.Blocks.RefOff = block()
		f.Blocks.Imps, f.Blocks.NImps = graph.ReadImports(&d)
		if d.Err == nil && graph.LangNamed(f.Lang) == nil {
			d.Fail("language")
		}
		files = append(files, f)
	}
	if d.Err == nil && d.Off != len(d.Buf) {
		d.Fail("table length")
	}
	ix, ok := parseNameIndex(buf[indexAt:end])
	if d.Err == nil && !ok {
		d.Fail("name index")
	}
	if d.Err != nil {
		return nil, false, nameIndex{}, d.Err
	}
	return files, counted, ix, nil
}

// decode reads a whole graph file, every block included, and whether its reference counts are current.
func decode(buf []byte) ([]*graph.File, bool, error) {
	files, counted, _, err := decodeTable(buf)
	if err != nil {
		return nil, false, err
	}
	for _, f := range files {
		if f.Blocks.NSyms > 0 {
			syms, err := graph.DecodeSyms(f.Blocks.Syms, f.Blocks.NSyms)
			if err != nil {
				return nil, false, err
			}
			f.Symbols = syms
		}
		if f.LoadRefs(); len(f.Refs) == 0 && len(f.Blocks.Refs) > 1 {
			return nil, false, fmt.Errorf("%w: bad call sites of %s", codec.ErrCorrupt, f.Path)
		}
	}
	return files, counted, nil
}
