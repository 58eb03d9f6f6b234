//go:build unix

package config

import "golang.org/x/sys/unix"

// writable reports whether this process may make files in dir.
func writable(dir string) bool { return unix.Access(dir, unix.W_OK) == nil }
