module github.com/ingestd/ingestd/bench

go 1.26.8

replace github.com/ingestd/ingestd => ../

require (
	github.com/ingestd/ingestd v0.0.0-00010101000000-000000000000
	github.com/pkoukk/tiktoken-go v0.1.6
	github.com/pkoukk/tiktoken-go-loader v0.0.2
	github.com/tmc/langchaingo v0.1.14
)

require (
	github.com/dlclark/regexp2 v1.10.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	gitlab.com/golang-commonmark/html v0.0.0-20191124015941-a22733972181 // indirect
	gitlab.com/golang-commonmark/linkify v0.0.0-20191026162114-a0c2df6c8f82 // indirect
	gitlab.com/golang-commonmark/markdown v0.0.0-20211110145824-bf3e522c626a // indirect
	gitlab.com/golang-commonmark/mdurl v0.0.0-20191124015652-932350d1cb84 // indirect
	gitlab.com/golang-commonmark/puny v0.0.0-20191124015043-9f83538fa04f // indirect
	golang.org/x/text v0.44.0 // indirect
)
