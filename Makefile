# TapeBox. `make demo` runs the main job; `make test` passes the tests. See README.md.
GO      ?= go
PKGS    ?= ./...
TESTFLAGS ?= -timeout 30m

# Executor build flags: stripped, and without inlining, which keeps each binary under 4 MiB
# (test/depcheck checks the budget).
EXEC_FLAGS ?= -gcflags=all=-l -ldflags="-s -w"

.PHONY: build test check bench fuzz fidelity fidelity-board fidelity-codex-pi demo executor sandbox-image harness-image clean

build: executor
	$(GO) build -o bin/tapebox ./cmd/tapebox

# Static executor binaries for both Linux architectures (stdlib only, no cgo).
executor:
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 $(GO) build -trimpath $(EXEC_FLAGS) -o dist/tapebox-exec-amd64 ./cmd/tapebox-exec
	CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build -trimpath $(EXEC_FLAGS) -o dist/tapebox-exec-arm64 ./cmd/tapebox-exec

test: executor
	$(GO) test $(TESTFLAGS) $(PKGS)

check: executor
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) test -race $(TESTFLAGS) $(PKGS)

# The side-by-side suite (benchmarks/, scripts/bench.sh): bench-out/bench.txt, and
# bench-out/benchstat.txt when benchstat is on PATH. BENCH_COUNT=n runs each benchmark n times.
BENCH_COUNT ?= 6
bench: executor
	COUNT=$(BENCH_COUNT) GO=$(GO) ./scripts/bench.sh

# Every fuzz target in turn for FUZZTIME each (scripts/fuzz.sh; about 35 minutes at 60s):
# fuzz-out/summary.txt. Not part of test or check.
FUZZTIME ?= 60s
fuzz: executor
	FUZZTIME=$(FUZZTIME) GO=$(GO) ./scripts/fuzz.sh

# The differential scoreboard (internal/fidelity): each harness version (Claude Code,
# Codex, Pi, pinned and older) runs generated sequences until it made FIDELITY_CALLS calls,
# each recorded through the real harness and replayed in executor mode; every outcome is
# appended to the ledger (docs/fidelity-ledger, one JSON line a sequence) and
# docs/fidelity.md counts the whole ledger, so runs made in chunks add up
# (FIDELITY_ARGS='-fidelity.harness=codex -fidelity.only=0.171.0 -fidelity.first=5000').
# fidelity-board only rewrites docs/fidelity.md from the ledger. Needs
# harnesses/node_modules (npm ci there). Not part of test.
FIDELITY_CALLS ?= 2000
FIDELITY_WORKERS ?= 2
FIDELITY_LEDGER ?= $(CURDIR)/docs/fidelity-ledger
FIDELITY_ARGS ?=
fidelity: executor
	TAPEBOX_REQUIRE_HARNESSES=1 $(GO) test -timeout 6h -count=1 -run 'TestScoreboard$$' ./internal/fidelity \
		-fidelity.calls=$(FIDELITY_CALLS) -fidelity.workers=$(FIDELITY_WORKERS) -fidelity.ledger=$(FIDELITY_LEDGER) \
		-fidelity.out=$(CURDIR)/docs/fidelity.md $(FIDELITY_ARGS)

fidelity-board:
	$(GO) test -count=1 -run 'TestScoreboard$$' ./internal/fidelity -fidelity.ledger=$(FIDELITY_LEDGER) -fidelity.out=$(CURDIR)/docs/fidelity.md

# Codex and Pi alone (they were a board of their own; now rows of docs/fidelity.md).
fidelity-codex-pi:
	$(MAKE) fidelity FIDELITY_ARGS='-fidelity.harness=codex,pi $(FIDELITY_ARGS)'

demo: build
	./bin/tapebox demo --out demo-out

sandbox-image:
	./scripts/sandbox-image.sh

# tapebox/harnesses:bookworm: the sandbox image with Gemini CLI and OpenCode (from
# harnesses/node_modules) and their set-up, for tapebox fork --sandbox (docs/fork.md).
harness-image: sandbox-image
	./scripts/harness-image.sh

clean:
	rm -rf bin dist bench-out fuzz-out demo-out
