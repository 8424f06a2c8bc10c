// Package codec is the byte encoding the graph's stored files and the parse worker's records share:
// varints, length-prefixed strings and blocks, written by Encoder and read back, checked, by Decoder.
package codec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"unsafe"
)

// ErrCorrupt reports bytes that cannot be read; the caller rebuilds what they held.
var ErrCorrupt = errors.New("graph file is corrupt")

// Encoder appends to Buf; with W set, it hands Buf and large blocks to W as it goes.
type Encoder struct {
	Buf     []byte
	W       io.Writer
	Err     error
	flushed int // bytes handed to W so far
}

// Flush hands what Buf holds to W.
func (e *Encoder) Flush() error {
	if e.W != nil && e.Err == nil && len(e.Buf) > 0 {
		_, e.Err = e.W.Write(e.Buf)
		e.flushed += len(e.Buf)
		e.Buf = e.Buf[:0]
	}
	return e.Err
}

// Pos is the offset in the output of the next byte.
func (e *Encoder) Pos() int { return e.flushed + len(e.Buf) }

// Raw appends b as it is; large blocks (often straight from the old file's mapping) go to W without a copy.
func (e *Encoder) Raw(b []byte) {
	if e.W != nil && len(b) >= 4096 {
		if e.Flush() == nil {
			_, e.Err = e.W.Write(b)
			e.flushed += len(b)
		}
		return
	}
	e.Buf = append(e.Buf, b...)
	if e.W != nil && len(e.Buf) >= 1<<16 {
		e.Flush()
	}
}

// UV appends an unsigned varint.
func (e *Encoder) UV(x uint64) { e.Buf = binary.AppendUvarint(e.Buf, x) }

// V appends a signed varint.
func (e *Encoder) V(x int64) { e.Buf = binary.AppendVarint(e.Buf, x) }

// Str appends a length-prefixed string.
func (e *Encoder) Str(s string) {
	e.UV(uint64(len(s)))
	e.Buf = append(e.Buf, s...)
}

// Blob appends a length-prefixed block (Decoder.Blob reads it).
func (e *Encoder) Blob(b []byte) {
	e.UV(uint64(len(b)))
	e.Buf = append(e.Buf, b...)
}

// U64 appends a little-endian uint64.
func (e *Encoder) U64(x uint64) { e.Buf = binary.LittleEndian.AppendUint64(e.Buf, x) }

// Decoder reads Buf from Off; the first failure sticks in Err and every later read returns zero.
type Decoder struct {
	Buf []byte
	Off int
	Err error
}

// Fail records that what is read as what is damaged.
func (d *Decoder) Fail(what string) {
	if d.Err == nil {
		d.Err = fmt.Errorf("%w: bad %s at byte %d", ErrCorrupt, what, d.Off)
	}
}

// UV reads an unsigned varint.
func (d *Decoder) UV() uint64 {
	if d.Err != nil {
		return 0
	}
	x, n := binary.Uvarint(d.Buf[d.Off:])
	if n <= 0 {
		d.Fail("number")
		return 0
	}
	d.Off += n
	return x
}

// V reads a signed varint.
func (d *Decoder) V() int64 {
	if d.Err != nil {
		return 0
	}
	x, n := binary.Varint(d.Buf[d.Off:])
	if n <= 0 {
		d.Fail("number")
		return 0
	}
	d.Off += n
	return x
}

// U32 reads an unsigned varint that must fit a line number.
func (d *Decoder) U32() uint32 {
	x := d.UV()
	if x > 1<<31 {
		d.Fail("line")
		return 0
	}
	return uint32(x)
}

// Count reads a length whose elements take at least min bytes each, so a bad count cannot allocate much.
func (d *Decoder) Count(min int) int {
	x := d.UV()
	if x > uint64(len(d.Buf)-d.Off)/uint64(min) {
		d.Fail("count")
		return 0
	}
	return int(x)
}

// Byte reads one byte.
func (d *Decoder) Byte() byte {
	if d.Err != nil || d.Off >= len(d.Buf) {
		d.Fail("byte")
		return 0
	}
	b := d.Buf[d.Off]
	d.Off++
	return b
}

// U64 reads a little-endian uint64.
func (d *Decoder) U64() uint64 {
	if d.Err != nil || len(d.Buf)-d.Off < 8 {
		d.Fail("hash")
		return 0
	}
	x := binary.LittleEndian.Uint64(d.Buf[d.Off:])
	d.Off += 8
	return x
}

// Blob reads a length-prefixed block without copying it.
func (d *Decoder) Blob() []byte {
	n := d.UV()
	if d.Err != nil {
		return nil
	}
	if n > uint64(len(d.Buf)-d.Off) {
		d.Fail("block")
		return nil
	}
	b := d.Buf[d.Off : d.Off+int(n) : d.Off+int(n)]
	d.Off += int(n)
	return b
}

// Skip passes over a string.
func (d *Decoder) Skip() { d.Blob() }

// Str reads a length-prefixed string that points into Buf, which must stay unchanged while it lives.
func (d *Decoder) Str() string {
	n := d.UV()
	if d.Err != nil {
		return ""
	}
	if n > uint64(len(d.Buf)-d.Off) {
		d.Fail("string")
		return ""
	}
	if n == 0 {
		return ""
	}
	s := unsafe.String(&d.Buf[d.Off], int(n))
	d.Off += int(n)
	return s
}
