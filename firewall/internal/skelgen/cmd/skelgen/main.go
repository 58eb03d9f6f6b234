// Command skelgen writes the fence detector's skeleton table (see package
// skelgen). Run it through `go generate ./firewall`.
//
//	skelgen -keyword KEYWORD -o FILE
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"

	"github.com/ingestd/ingestd/firewall/internal/skelgen"
)

func main() {
	keyword := flag.String("keyword", "", "the marker keyword, lower-case letters")
	out := flag.String("o", "", "output file")
	pkg := flag.String("package", "firewall", "package of the output file")
	flag.Parse()
	if *keyword == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "usage: skelgen -keyword KEYWORD -o FILE")
		os.Exit(2)
	}
	var buf bytes.Buffer
	if err := skelgen.Generate(&buf, *pkg, *keyword); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, buf.Bytes(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
