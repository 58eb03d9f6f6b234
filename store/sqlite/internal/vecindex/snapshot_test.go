package vecindex_test

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/ingestd/ingestd/store/internal/corpus"
	"github.com/ingestd/ingestd/store/sqlite/internal/binio"
	"github.com/ingestd/ingestd/store/sqlite/internal/vecindex"
)

func TestSnapshotRoundTrip(t *testing.T) {
	c := corpus.New(3, 1000)
	x := vecindex.New(24)
	defer x.Free()
	for k := int64(0); k < 5000; k++ {
		x.Add(k, int32(k%5), c.Gaussian(24))
	}
	for k := int64(0); k < 5000; k += 3 {
		x.Remove(k)
	}
	var buf bytes.Buffer
	w := binio.NewWriter(&buf)
	x.Write(w)
	if err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	r := binio.NewReader(bytes.NewReader(data), int64(len(data)))
	y, err := vecindex.Read(r)
	if err == nil {
		err = r.Finish()
	}
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	defer y.Free()
	if got, want := y.Len(), x.Len(); got != want {
		t.Fatalf("Len = %d, want %d", got, want)
	}
	allowed := []bool{true, false, true, true, false}
	for range 20 {
		q := c.Gaussian(24)
		if got, want := y.Search(q, allowed, 15, nil), x.Search(q, allowed, 15, nil); !slices.Equal(got, want) {
			t.Fatalf("read back: %v, want %v", got, want)
		}
	}
	// Both go on alike.
	for k := int64(6000); k < 6100; k++ {
		v := c.Gaussian(24)
		x.Add(k, 1, v)
		y.Add(k, 1, v)
		x.Remove(k - 5000)
		y.Remove(k - 5000)
	}
	q := c.Gaussian(24)
	if got, want := y.Search(q, nil, 15, nil), x.Search(q, nil, 15, nil); !slices.Equal(got, want) {
		t.Fatalf("after more writes: %v, want %v", got, want)
	}
	for _, bad := range [][]byte{data[:len(data)/2], data[:len(data)-4], nil,
		func() []byte { d := bytes.Clone(data); d[len(d)-100] ^= 1; return d }()} {
		r := binio.NewReader(bytes.NewReader(bad), int64(len(bad)))
		z, err := vecindex.Read(r)
		if err == nil {
			err = r.Finish()
			z.Free()
		}
		if !errors.Is(err, binio.ErrCorrupt) {
			t.Errorf("%d bytes of %d: err = %v, want ErrCorrupt", len(bad), len(data), err)
		}
	}
}
