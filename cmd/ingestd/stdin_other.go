//go:build !unix

package main

import "os"

// pollableStdin is os.Stdin where the poller is not tried.
func pollableStdin() (*os.File, func()) { return os.Stdin, func() {} }
