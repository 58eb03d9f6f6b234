package agentdojo

import (
	"context"
	"encoding/json"
	"os"
	"testing"
)

func TestSmoke(t *testing.T) {
	for _, name := range []string{"workspace", "slack"} {
		b, err := Open(context.Background(), Options{Suite: os.DirFS("testdata/" + name)})
		if err != nil {
			t.Fatal(err)
		}
		r, err := b.Replay(context.Background())
		b.Close()
		if err != nil {
			t.Fatal(err)
		}
		out, _ := json.MarshalIndent(r, "", " ")
		t.Logf("%s %+v\n%s", name, r.Org, out)
	}
}
