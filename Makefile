# dsh-acp — make targets. `make demo` and `make test` are the two set-up
# commands of the README.
GO ?= go
BIN := bin/dsh-acp
UPSTREAM ?= ../shared/upstream
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)

.PHONY: build test demo conformance snapshots bench vet clean

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/dsh-acp

## test: every unit, integration and replay test, with the race detector.
test:
	$(GO) vet ./...
	$(GO) test -race -count=1 ./...

## demo: a keyless replay of a recorded session, shown as a transcript.
demo: build
	$(BIN) --replay --transcript snapshots/testdata/demo

## snapshots: replay our own scenario corpus.
snapshots: build
	$(BIN) --replay snapshots/testdata

## conformance: replay upstream's recorded corpus (../shared/upstream).
conformance: build
	$(BIN) --replay $(UPSTREAM)

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

vet:
	$(GO) vet ./...

clean:
	rm -rf bin
