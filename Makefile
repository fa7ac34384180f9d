# dsh-acp — make targets. `make demo` and `make test` are the two set-up
# commands of the README.
GO ?= go
BIN := bin/dsh-acp
# The executables a release ships, each built from ./cmd/<name> into bin/:
# the agent and the worker that runs model-written programs (found beside
# the agent). `make build` builds them all; `make dist` packs them all.
EXECUTABLES := dsh-acp dsh-acp-worker
UPSTREAM ?= ../shared/upstream
# RELEASE is the semantic version of the next release, declared here only:
# make dist stamps it as is (0.3.0), make build as a development build of
# it (0.3.0-dev+<commit>); --version and initialize's agentInfo.version
# carry it.
RELEASE := 0.3.0
COMMIT := $(shell git rev-parse --short=12 HEAD 2>/dev/null)
VERSION ?= $(RELEASE)-dev$(if $(COMMIT),+$(COMMIT))
LDFLAGS := -s -w -X main.version=$(VERSION)
# DIST_CMDS are the executables every release archive ships: EXECUTABLES,
# the agent's first.
DIST_CMDS := $(addprefix ./cmd/,$(EXECUTABLES))
# DIST_BASE_URL is where the archives are published (agent.json's archive
# URLs are $(DIST_BASE_URL)/<archive>); DIST_TARGETS narrows the six.
DIST_BASE_URL ?= https://github.com/dsh-acp/dsh-acp/releases/download/v$(RELEASE)
DIST_TARGETS ?=
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null)
# The staticcheck release `make lint` runs (2026.2.2, built for Go 1.26 and
# 1.27); `make tools` installs it into $(GOBIN).
STATICCHECK_VERSION := v0.8.2
GOBIN ?= $(shell $(GO) env GOPATH)/bin
STATICCHECK := $(GOBIN)/staticcheck

.PHONY: build dist test lint tools fuzz demo conformance snapshots bench vet clean

## build: static binaries (no cgo: sandbox probing, Landlock and user
## lookup are pure Go), so they run on any Linux and map no libc; without
## the symbol table and DWARF (-s -w: smaller on disk, the same RSS:
## neither is mapped at run time; stack traces keep their names). One
## binary per EXECUTABLES entry, side by side in bin/.
build:
	@set -e; for e in $(EXECUTABLES); do \
		CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/$$e ./cmd/$$e; \
	done

## dist: the release in dist/: an archive per ACP Registry platform
## (darwin, linux: .tar.gz; windows: .zip; the executables at the root,
## LICENSE, README.md), SHA256SUMS, and the registry entry agent.json with
## icon.svg. Offline (the module cache only: run go mod download first on
## a fresh machine) and reproducible: -trimpath, an empty build id, no cgo,
## archive entries sorted and dated SOURCE_DATE_EPOCH (the last commit's).
dist:
	SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) $(GO) run ./cmd/dist -version $(RELEASE) -base-url $(DIST_BASE_URL) \
		-out dist $(if $(DIST_TARGETS),-targets $(DIST_TARGETS)) $(DIST_CMDS)

## test: every unit, integration and replay test, with the race detector.
test:
	$(GO) vet ./...
	$(GO) test -race -count=1 ./...

## lint: the hygiene CI checks before the tests: every tracked Go file
## gofmt'ed (scenario workspaces under testdata/ are data, not code), go.mod
## and go.sum tidy, go vet, and staticcheck at STATICCHECK_VERSION.
lint:
	@src=$$(git ls-files '*.go' ':!:**/testdata/**') || exit 1; \
	bad=$$(echo "$$src" | xargs -r gofmt -l) || exit 1; \
	if [ -n "$$bad" ]; then echo "gofmt -l: not formatted:"; echo "$$bad"; exit 1; fi
	$(GO) mod tidy -diff
	$(GO) vet ./...
	@v=$$($(STATICCHECK) -version 2>/dev/null); case "$$v" in \
	*"($(STATICCHECK_VERSION:v%=%))"*) ;; \
	*) echo "staticcheck $(STATICCHECK_VERSION) not found at $(STATICCHECK) (have: $${v:-none}); run make tools"; exit 1;; \
	esac
	$(STATICCHECK) ./...

## tools: install the pinned linters into $(GOBIN).
tools:
	GOFLAGS= $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

## fuzz: every fuzz target for a budget of executions each, about 10 s of
## exploration on the 2-core CI machine (go test already runs their seed
## corpora; this explores beyond them). A crash found is written to the
## target's testdata/fuzz and becomes a seed. The budgets are counts, not
## durations: with go1.26 a duration (-fuzztime 10s) can fail a clean run
## with "context deadline exceeded" when the deadline races a worker
## (golang/go#75804, fixed in Go 1.27). FUZZTIME=30s overrides every budget
## for a longer local run.
FUZZTIME ?=
FUZZ_TARGETS := ./acp:FuzzLineStream:20000x ./acp:FuzzEnvelope:20000x ./acp:FuzzHandlers:15000x \
	./agent/llm/deepseek:FuzzFastPayload:100000x ./agent/llm/deepseek:FuzzSSE:25000x \
	./session/jsonl:FuzzLoad:7000x ./snapshots:FuzzScenarioLoad:20000x ./snapshots:FuzzNormalize:20000x
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; rest=$${t#*:}; name=$${rest%%:*}; budget=$${rest#*:}; \
		budget=$${FUZZTIME:-$$budget}; \
		echo "fuzz $$pkg $$name ($$budget)"; \
		$(GO) test -run '^$$' -fuzz "^$$name$$" -fuzztime $$budget $$pkg; \
	done

## demo: a keyless replay of a recorded session, shown as a transcript.
demo: build
	$(BIN) --replay --transcript snapshots/testdata/demo

## snapshots: replay our own scenario corpus.
snapshots: build
	$(BIN) --replay snapshots/testdata

## conformance: replay upstream's recorded corpus (../shared/upstream).
conformance: build
	$(BIN) --replay $(UPSTREAM)

## bench: all Go benchmarks, then acpbench (cmd/acpbench) against bin/dsh-acp
## and the in-process mock LLM: N=10 iterations and a 100k-chunk streaming
## stress, loopback only; the JSON report goes to bin/acpbench.json.
bench: build
	$(GO) test -run '^$$' -bench . -benchmem ./...
	$(GO) run ./cmd/acpbench -n 10 -stress 100000 -agent dsh-acp=$(BIN) -json bin/acpbench.json

vet:
	$(GO) vet ./...

clean:
	rm -rf bin dist
