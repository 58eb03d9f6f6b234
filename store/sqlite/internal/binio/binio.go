// Package binio writes and reads the in-memory indexes' snapshot format:
// little-endian integers, length-prefixed strings and arrays, and a
// CRC-32C of every byte so that a torn or corrupt file is refused rather
// than half-trusted.
//
// A Reader never allocates more than the bytes left in its input: a
// corrupt length fails with ErrCorrupt instead of exhausting memory. Both
// sides remember their first error; check Err (or Finish) once at the end.
package binio

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"math"
	"unsafe"
)

// ErrCorrupt is returned for input that is not what the writer wrote:
// truncated, a length beyond the input, or a checksum that does not match.
var ErrCorrupt = errors.New("snapshot corrupt")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// littleEndian is whether the host stores integers as the format does, so
// arrays can be copied as they are.
var littleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// Writer writes the format to an io.Writer, buffered.
type Writer struct {
	w   *bufio.Writer
	crc hash.Hash32
	err error
	buf [8]byte
}

// NewWriter returns a Writer on w.
func NewWriter(w io.Writer) *Writer {
	crc := crc32.New(castagnoli)
	return &Writer{w: bufio.NewWriterSize(io.MultiWriter(w, crc), 1<<20), crc: crc}
}

func (w *Writer) write(b []byte) {
	if w.err == nil {
		_, w.err = w.w.Write(b)
	}
}

// U64 writes an unsigned integer.
func (w *Writer) U64(v uint64) {
	binary.LittleEndian.PutUint64(w.buf[:], v)
	w.write(w.buf[:8])
}

// I64 writes a signed integer.
func (w *Writer) I64(v int64) { w.U64(uint64(v)) }

// Int writes an int.
func (w *Writer) Int(v int) { w.U64(uint64(int64(v))) }

// F64 writes a float64.
func (w *Writer) F64(v float64) { w.U64(math.Float64bits(v)) }

// String writes a length-prefixed string.
func (w *Writer) String(s string) {
	w.Int(len(s))
	w.write(unsafe.Slice(unsafe.StringData(s), len(s)))
}

// Strings writes a length-prefixed list of strings.
func (w *Writer) Strings(ss []string) {
	w.Int(len(ss))
	for _, s := range ss {
		w.String(s)
	}
}

// Slice writes a length-prefixed array of fixed-size integers or floats.
func Slice[T ~int8 | ~uint8 | ~int32 | ~uint32 | ~int64 | ~uint64 | ~float32](w *Writer, s []T) {
	w.Int(len(s))
	if len(s) == 0 {
		return
	}
	size := int(unsafe.Sizeof(s[0]))
	raw := unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*size)
	if littleEndian || size == 1 {
		w.write(raw)
		return
	}
	for i := 0; i < len(raw); i += size {
		for j := size - 1; j >= 0; j-- {
			w.write(raw[i+j : i+j+1])
		}
	}
}

// Finish writes the checksum of everything written and flushes. It
// returns the first error of the Writer.
func (w *Writer) Finish() error {
	if w.err == nil {
		w.err = w.w.Flush()
	}
	sum := w.crc.Sum32()
	binary.LittleEndian.PutUint32(w.buf[:], sum)
	if w.err == nil {
		_, w.err = w.w.Write(w.buf[:4])
	}
	if w.err == nil {
		w.err = w.w.Flush()
	}
	return w.err
}

// Reader reads what a Writer wrote.
type Reader struct {
	r    *bufio.Reader
	crc  hash.Hash32
	left int64 // bytes not read yet, checksum included
	err  error
	buf  [8]byte
}

// NewReader returns a Reader of size bytes from r.
func NewReader(r io.Reader, size int64) *Reader {
	return &Reader{r: bufio.NewReaderSize(r, 1<<20), crc: crc32.New(castagnoli), left: size}
}

// Err is the first error of the Reader.
func (r *Reader) Err() error { return r.err }

func (r *Reader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

func (r *Reader) read(b []byte) bool {
	if r.err != nil {
		return false
	}
	if int64(len(b)) > r.left-4 {
		r.fail(fmt.Errorf("%w: %d bytes wanted, %d left", ErrCorrupt, len(b), r.left-4))
		return false
	}
	if _, err := io.ReadFull(r.r, b); err != nil {
		r.fail(fmt.Errorf("%w: %v", ErrCorrupt, err))
		return false
	}
	r.crc.Write(b)
	r.left -= int64(len(b))
	return true
}

// U64 reads an unsigned integer.
func (r *Reader) U64() uint64 {
	if !r.read(r.buf[:8]) {
		return 0
	}
	return binary.LittleEndian.Uint64(r.buf[:8])
}

// I64 reads a signed integer.
func (r *Reader) I64() int64 { return int64(r.U64()) }

// Int reads an int.
func (r *Reader) Int() int { return int(int64(r.U64())) }

// F64 reads a float64.
func (r *Reader) F64() float64 { return math.Float64frombits(r.U64()) }

// Len reads a length of elements of size bytes each and checks that they
// fit in the input.
func (r *Reader) Len(size int) int {
	n := r.I64()
	if r.err != nil {
		return 0
	}
	if n < 0 || n > (r.left-4)/int64(max(size, 1)) {
		r.fail(fmt.Errorf("%w: length %d of %d-byte elements, %d bytes left", ErrCorrupt, n, size, r.left-4))
		return 0
	}
	return int(n)
}

// String reads a length-prefixed string.
func (r *Reader) String() string {
	n := r.Len(1)
	if n == 0 {
		return ""
	}
	b := make([]byte, n)
	if !r.read(b) {
		return ""
	}
	return unsafe.String(&b[0], n)
}

// Strings reads a length-prefixed list of strings.
func (r *Reader) Strings() []string {
	n := r.Len(8)
	if n == 0 {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = r.String()
	}
	return out
}

// ReadSlice reads a length-prefixed array into a new slice of exactly its
// length.
func ReadSlice[T ~int8 | ~uint8 | ~int32 | ~uint32 | ~int64 | ~uint64 | ~float32](r *Reader) []T {
	var zero T
	size := int(unsafe.Sizeof(zero))
	n := r.Len(size)
	if n == 0 {
		return nil
	}
	s := make([]T, n)
	ReadInto(r, s)
	return s
}

// ReadInto reads len(dst) elements of an array written by Slice into dst,
// after its length, which the caller has read (Len) and checked.
func ReadInto[T ~int8 | ~uint8 | ~int32 | ~uint32 | ~int64 | ~uint64 | ~float32](r *Reader, dst []T) {
	if len(dst) == 0 {
		return
	}
	size := int(unsafe.Sizeof(dst[0]))
	raw := unsafe.Slice((*byte)(unsafe.Pointer(&dst[0])), len(dst)*size)
	if !r.read(raw) {
		return
	}
	if !littleEndian && size > 1 {
		for i := 0; i < len(raw); i += size {
			for a, b := i, i+size-1; a < b; a, b = a+1, b-1 {
				raw[a], raw[b] = raw[b], raw[a]
			}
		}
	}
}

// Finish reads the checksum and compares it with what was read; any bytes
// left over are corruption too.
func (r *Reader) Finish() error {
	if r.err != nil {
		return r.err
	}
	sum := r.crc.Sum32()
	if r.left != 4 {
		return fmt.Errorf("%w: %d bytes left before the checksum, want 0", ErrCorrupt, r.left-4)
	}
	if _, err := io.ReadFull(r.r, r.buf[:4]); err != nil {
		return fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if got := binary.LittleEndian.Uint32(r.buf[:4]); got != sum {
		return fmt.Errorf("%w: checksum %08x, want %08x", ErrCorrupt, got, sum)
	}
	return nil
}
