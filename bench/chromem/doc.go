// Package chromem compares the vector half of ingestd's retrieval with
// github.com/philippgille/chromem-go's brute-force search over the same
// vectors. It is a separate module so the comparison's dependency never
// reaches the ingestd binary; it holds benchmarks only.
package chromem
