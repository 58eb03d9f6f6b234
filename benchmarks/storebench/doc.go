// Package storebench measures the embedded SQLite store against the limit
// its own engine sets (issue 20): it builds a synthetic corpus of any size
// into a data directory `ingestd serve` can open, and gives the
// measurements of `ingestd-bench store` what they need — the baseline of
// each (one SELECT of every row, a raw INSERT of the same rows) and a
// serve child process's memory and readiness.
//
// It measures; it changes nothing in the store. It lives under
// benchmarks/ because it is a measuring instrument for developing the
// product, not part of it: cmd/ingestd-bench runs it, ingestd does not.
package storebench
