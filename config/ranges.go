package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/ingestd/ingestd/internal/netaddr"
)

// rangeRule is one numeric setting and the values it takes: every number
// in the configuration has one, so a typo (-5, 99999) is refused at
// load with its line instead of meaning a default or failing later.
type rangeRule struct {
	block, key string // "chunking", "max_tokens"
	v          int64
	min, max   int64
	zero       string // what 0 means when it is allowed as "the default"; "" when 0 is in range
}

// validateRanges refuses numeric settings out of range, a listen address
// serve could not bind by its shape, and a data_dir that cannot be one.
// It stats the file system and opens nothing.
func (c *Config) validateRanges() error {
	n, s, e, h := c.NATS, c.Store, c.Embedder, c.Health
	rules := []rangeRule{
		{"chunking", "max_tokens", int64(c.Chunking.MaxTokens), 1, 1 << 20, "the default, 400"},
		{"chunking", "overlap_tokens", int64(c.Chunking.OverlapTokens), -1, 1 << 20, ""},
		{"store", "max_conns", int64(s.MaxConns), 1, 10000, "the default"},
		{"store", "ef_search", int64(s.EfSearch), 1, 1000, "the default"},
		{"store", "text_candidates", int64(s.TextCandidates), 1, 1 << 20, "the default"},
		{"store", "hnsw_m", int64(s.HNSWM), 2, 100, "the default"},
		{"store", "hnsw_ef_construction", int64(s.HNSWEfConstruction), 4, 1000, "the default"},
		{"embedder", "batch_size", int64(e.BatchSize), 1, 1 << 16, "the default"},
		{"nats", "replicas", int64(n.Replicas), 1, 5, "the default"},
		{"nats", "max_deliver", int64(n.MaxDeliver), 1, 1000, "the default"},
		{"nats", "concurrency", int64(n.Concurrency), 1, 1024, "the default, 4"},
		{"nats", "max_msg_size", int64(n.MaxMsgSize), 1024, 64 << 20, "the default, 1 MiB"},
		{"nats", "max_bytes", n.MaxBytes, 1 << 20, 1 << 50, "the default, 1 GiB"},
		{"health", "keep_passes", int64(h.KeepPasses), 1, 1 << 20, "the default, 100"},
		{"health", "failed_passes", int64(h.FailedPasses), 1, 1 << 20, "the default, 1"},
		{"health", "stale_intervals", int64(h.StaleIntervals), 1, 1 << 20, "the default, 3"},
		{"gateway", "max_turns", int64(c.Gateway.MaxTurns), 1, 1 << 16, "the default, 256"},
		{"gateway", "max_result_bytes", int64(c.Gateway.MaxResultBytes), 1024, 64 << 20, "the default, 1 MiB"},
	}
	for _, r := range rules {
		if r.v == 0 && r.zero != "" || r.v >= r.min && r.v <= r.max {
			continue
		}
		msg := fmt.Sprintf("%s: %s %d is out of range: use %d to %d", r.block, r.key, r.v, r.min, r.max)
		if r.zero != "" {
			msg += fmt.Sprintf(", or leave it out for %s", r.zero)
		}
		return &Error{Path: c.path, Line: c.KeyLine(r.block, r.key), Msg: msg}
	}
	if err := netaddr.CheckPort(c.Listen); err != nil {
		return &Error{Path: c.path, Line: c.Line("listen"), Msg: "listen: " + err.Error()}
	}
	if c.NATS.Listen != "" {
		addr := c.NATS.Listen
		if _, err := strconv.Atoi(addr); err == nil {
			addr = "127.0.0.1:" + addr
		}
		if err := netaddr.CheckPort(addr); err != nil {
			return &Error{Path: c.path, Line: c.NATS.Line("listen"), Msg: "nats: listen: " + err.Error()}
		}
	}
	if err := checkDataDir(c.Path(c.DataDir)); err != nil {
		return &Error{Path: c.path, Line: c.Line("data_dir"), Msg: "data_dir: " + err.Error()}
	}
	return nil
}

// KeyLine is the line of key inside a top-level block, else the block's.
func (c *Config) KeyLine(block, key string) int {
	if block == "nats" {
		return c.NATS.Line(key)
	}
	if l := c.subLines[block+"."+key]; l > 0 {
		return l
	}
	return c.Line(block)
}

// checkDataDir refuses a data_dir that exists but is not a folder, or
// that would be made inside something that is not a writable folder.
// It makes nothing.
func checkDataDir(dir string) error {
	p := dir
	for {
		fi, err := os.Stat(p)
		switch {
		case err == nil && !fi.IsDir():
			if p == dir {
				return fmt.Errorf("%s is a file, not a folder", dir)
			}
			return fmt.Errorf("%s cannot be made: %s is a file, not a folder", dir, p)
		case err == nil:
			if !writable(p) {
				return fmt.Errorf("%s is not writable by this user", p)
			}
			return nil
		case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR):
			return fmt.Errorf("%s: %v", p, errors.Unwrap(err))
		}
		parent := filepath.Dir(p)
		if parent == p {
			return nil
		}
		p = parent
	}
}
