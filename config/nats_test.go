package config

import (
	"testing"

	"github.com/ingestd/ingestd/jobs"
)

// TestMinJobKeyBytesIsTheQueues: the minimum the messages name is the one
// the queue enforces (this package does not import the queue to read it).
func TestMinJobKeyBytesIsTheQueues(t *testing.T) {
	if MinJobKeyBytes != jobs.MinJobKeyBytes {
		t.Errorf("config.MinJobKeyBytes = %d, jobs.MinJobKeyBytes = %d", MinJobKeyBytes, jobs.MinJobKeyBytes)
	}
}
