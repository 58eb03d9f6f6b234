package retrieval

import (
	"testing"

	"github.com/ingestd/ingestd"
)

func TestNeedsExternal(t *testing.T) {
	hit := func(doc string, score float64) ingestd.Hit {
		return ingestd.Hit{ChunkID: "c-" + doc, DocumentID: doc, Score: score}
	}
	untrusted := func(h ingestd.Hit) bool { return h.DocumentID[0] == 'u' }
	tests := []struct {
		name string
		r    rankings
		want bool
	}{
		{"trusted text hit is best", rankings{text: []ingestd.Hit{hit("t1", 9), hit("u1", 8)}}, false},
		{"untrusted text hit beats every trusted one", rankings{text: []ingestd.Hit{hit("u1", 9), hit("t1", 8)}}, true},
		{"a tie stays trusted", rankings{text: []ingestd.Hit{hit("u1", 8), hit("t1", 8)}}, false},
		{"no trusted text hit", rankings{text: []ingestd.Hit{hit("u1", 0.5)}}, true},
		{"no untrusted text hit", rankings{text: []ingestd.Hit{hit("t1", 3)}, vec: []ingestd.Hit{hit("u1", 0.9)}}, false},
		{"the text ranking decides when it found anything", rankings{text: []ingestd.Hit{hit("t1", 3)}, vec: []ingestd.Hit{hit("u1", 0.9), hit("t1", 0.2)}}, false},
		{"no text hit: the vector ranking decides", rankings{vec: []ingestd.Hit{hit("u1", 0.6), hit("t1", 0.4)}}, true},
		{"no text hit, trusted vector hit best", rankings{vec: []ingestd.Hit{hit("t1", 0.6), hit("u1", 0.4)}}, false},
		{"nothing ranked", rankings{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := needsExternal(tt.r, untrusted); got != tt.want {
				t.Errorf("needsExternal = %v, want %v", got, tt.want)
			}
		})
	}
}
