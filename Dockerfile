# syntax=docker/dockerfile:1
# ingestd in a small runtime image. Build: docker build -t ingestd .
# The SQLite store needs cgo, so the build stage has a C compiler; the
# runtime stage is Debian slim with the binary, CA certificates (for IMAP,
# GitHub and HTTPS sources) and curl (for the compose health checks).

FROM golang:1.26-bookworm AS build
WORKDIR /src
# Dependencies first, so a source change does not download them again.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION=dev
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=1 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/ingestd ./cmd/ingestd

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates curl \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 ingestd \
 && useradd --system --uid 10001 --gid ingestd --home-dir /var/lib/ingestd --shell /usr/sbin/nologin ingestd \
 && install -d -o ingestd -g ingestd -m 0750 /var/lib/ingestd
COPY --from=build /out/ingestd /usr/local/bin/ingestd
USER ingestd:ingestd
WORKDIR /var/lib/ingestd
VOLUME ["/var/lib/ingestd"]
EXPOSE 7700
ENTRYPOINT ["ingestd"]
CMD ["serve", "--config", "/etc/ingestd/ingestd.yaml"]
