package clock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ingestd/ingestd/internal/clock"
)

func TestSleep(t *testing.T) {
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		d    time.Duration
		want error
	}{
		{"elapses", context.Background(), time.Millisecond, nil},
		{"nothing to wait", context.Background(), 0, nil},
		{"ended context", ended, time.Hour, context.Canceled},
		{"ended context, nothing to wait", ended, -time.Second, context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := clock.Sleep(tt.ctx, tt.d); !errors.Is(err, tt.want) {
				t.Fatalf("Sleep = %v, want %v", err, tt.want)
			}
		})
	}
}

// TestSleepEndsWithContext: a context that ends during the wait ends it.
func TestSleepEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- clock.Sleep(ctx, time.Hour) }()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep = %v, want context.Canceled", err)
	}
}
