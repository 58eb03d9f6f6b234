#!/bin/sh
# Regenerates gen/ from proto/. Needs protoc on PATH (Debian:
# apt-get install protobuf-compiler); the Go plugins run at the versions
# pinned in go.mod.
set -eu
cd "$(dirname "$0")/.."
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
GOBIN="$bin" go install google.golang.org/protobuf/cmd/protoc-gen-go connectrpc.com/connect/cmd/protoc-gen-connect-go
PATH="$bin:$PATH" protoc -I proto \
	--go_out=gen --go_opt=paths=source_relative \
	--connect-go_out=gen --connect-go_opt=paths=source_relative \
	proto/ingestd/v1/*.proto
