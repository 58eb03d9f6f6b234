module github.com/ingestd/ingestd/bench/chromem

go 1.26.8

require (
	github.com/ingestd/ingestd v0.0.0
	github.com/philippgille/chromem-go v0.7.0
)

require (
	github.com/mattn/go-sqlite3 v1.14.53 // indirect
	golang.org/x/text v0.44.0 // indirect
)

replace github.com/ingestd/ingestd => ../../
