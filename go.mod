module github.com/ingestd/ingestd

go 1.26.8
