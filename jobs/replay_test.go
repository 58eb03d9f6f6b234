package jobs

import (
	"context"
	"testing"
	"time"

	"github.com/ingestd/ingestd/connectors/webhook"
	"github.com/ingestd/ingestd/connectors/webhook/webhooktest"
)

var _ webhook.Replays = (*Replays)(nil)

// TestReplaysConformance runs the replay-memory suite on the KV bucket,
// each handle on its own connection (as separate processes are).
func TestReplaysConformance(t *testing.T) {
	webhooktest.RunReplays(t, func(t *testing.T) func() webhook.Replays {
		e := MustEmbedded(t)
		return func() webhook.Replays {
			r, err := MustQueue(t, e, nil).OpenReplays(context.Background(), time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
	})
}
