package textindex

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/ingestd/ingestd/store/sqlite/internal/binio"
)

func roundTrip(tb testing.TB, x *Index) (*Index, []byte) {
	tb.Helper()
	var buf bytes.Buffer
	w := binio.NewWriter(&buf)
	x.Write(w)
	if err := w.Finish(); err != nil {
		tb.Fatal(err)
	}
	r := binio.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	y, err := Read(r)
	if err == nil {
		err = r.Finish()
	}
	if err != nil {
		tb.Fatalf("Read: %v", err)
	}
	return y, buf.Bytes()
}

// An index read back from its snapshot answers like the one written —
// removed rows, escaped term frequencies and all — and keeps working as
// rows are added and removed after.
func TestSnapshotRoundTrip(t *testing.T) {
	c := newRandomCorpus(5)
	docs := map[int64]doc{}
	for i := range 900 {
		docs[int64(i)] = c.doc(int64(i), 4)
	}
	docs[900] = doc{key: 900, fields: [NumFields]string{"spam spam spam " + fmt.Sprint(make([]int, 40)), "spam spam spam", "spam spam"}}
	x := MustIndex(t, docs)
	for k := int64(0); k < 900; k += 7 {
		x.Remove(k)
		delete(docs, k)
	}
	y, _ := roundTrip(t, x)
	if got, want := y.Len(), x.Len(); got != want {
		t.Fatalf("Len = %d, want %d", got, want)
	}
	queries := [][]string{{"spam"}}
	for range 60 {
		queries = append(queries, c.query())
	}
	for _, q := range queries {
		checkSame(t, fmt.Sprint("read back: ", q), y.Search(q, nil, 10), x.Search(q, nil, 10))
	}
	// Both go on alike.
	for i := 1000; i < 1300; i++ {
		d := c.doc(int64(i), 4)
		docs[d.key] = d
		x.Add(d.key, d.group, d.fields[:]...)
		y.Add(d.key, d.group, d.fields[:]...)
	}
	for k := int64(1); k < 900; k += 5 {
		x.Remove(k)
		y.Remove(k)
		delete(docs, k)
	}
	for _, q := range queries {
		checkSame(t, fmt.Sprint("after more writes: ", q), y.Search(q, nil, 10), reference(docs, q, nil, 10))
	}
}

func TestSnapshotCorrupt(t *testing.T) {
	c := newRandomCorpus(6)
	docs := map[int64]doc{}
	for i := range 200 {
		docs[int64(i)] = c.doc(int64(i), 2)
	}
	_, data := roundTrip(t, MustIndex(t, docs))
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"truncated", data[:len(data)/2]},
		{"no checksum", data[:len(data)-4]},
		{"a byte flipped", func() []byte { d := bytes.Clone(data); d[len(d)/3] ^= 0x40; return d }()},
		{"empty", nil},
	} {
		r := binio.NewReader(bytes.NewReader(tc.data), int64(len(tc.data)))
		_, err := Read(r)
		if err == nil {
			err = r.Finish()
		}
		if !errors.Is(err, binio.ErrCorrupt) {
			t.Errorf("%s: err = %v, want ErrCorrupt", tc.name, err)
		}
	}
}
