//go:build race

package embedder_test

func init() { raceEnabled = true }
