package embedder_test

import (
	"os"
	"testing"
)

// envOrSkip returns the variable's value or skips the test when it is unset.
func envOrSkip(tb testing.TB, name string) string {
	tb.Helper()
	v := os.Getenv(name)
	if v == "" {
		tb.Skipf("%s not set", name)
	}
	return v
}
