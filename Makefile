# TapeBox. `make demo` runs the main job; `make test` passes the tests. See README.md.
GO      ?= go
PKGS    ?= ./...
TESTFLAGS ?= -timeout 30m

# Executor build flags: stripped, and without inlining, which keeps each binary under 3.5 MiB
# (test/depcheck checks the budget).
EXEC_FLAGS ?= -gcflags=all=-l -ldflags="-s -w"

.PHONY: build test check bench fuzz fidelity fidelity-codex-pi demo executor sandbox-image clean

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

# The differential scoreboard (internal/fidelity): FIDELITY_SEEDS generated sequences per
# harness version, each run through the real harness and replayed in executor mode, written
# to docs/fidelity.md. Needs harnesses/node_modules (npm ci there). Not part of test.
FIDELITY_SEEDS ?= 200
FIDELITY_WORKERS ?= 2
fidelity: executor
	TAPEBOX_REQUIRE_HARNESSES=1 $(GO) test -timeout 6h -count=1 -run 'TestScoreboard$$' ./internal/fidelity \
		-fidelity.seeds=$(FIDELITY_SEEDS) -fidelity.workers=$(FIDELITY_WORKERS) -fidelity.out=$(CURDIR)/docs/fidelity.md

# Codex and Pi, pinned and older versions (harnesses/package.json aliases), through the
# conformance suite's differential test (executor/conformance, internal/grammar), written to
# docs/fidelity-codex-pi.md until their grammars plug into internal/fidelity.
GEN_SEQS ?= 50
GEN_CALLS ?= 40
fidelity-codex-pi: executor
	rm -f $(CURDIR)/.fidelity-reports/gen-*.json
	mkdir -p $(CURDIR)/.fidelity-reports
	TAPEBOX_REQUIRE_HARNESSES=1 $(GO) test -timeout 6h -count=1 -run 'TestGenerated$$' ./executor/conformance \
		-gen.seqs=$(GEN_SEQS) -gen.calls=$(GEN_CALLS) -gen.seed=1000 -gen.strict=false -gen.report=$(CURDIR)/.fidelity-reports/gen.json
	$(GO) test -count=1 -run 'TestGeneratedBoard$$' ./executor/conformance \
		-gen.report=$(CURDIR)/.fidelity-reports/gen.json -gen.markdown=$(CURDIR)/docs/fidelity-codex-pi.md

demo: build
	./bin/tapebox demo --out demo-out

sandbox-image:
	./scripts/sandbox-image.sh

clean:
	rm -rf bin dist bench-out fuzz-out demo-out
