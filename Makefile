# Event platform: every developer entry point. `make help` lists the targets.
SHELL := /bin/bash
GO    ?= go
STAGE ?= dev
FUZZTIME ?= 30s
export JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION := 1
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 1
# Lambda functions built by `make build` (one bootstrap binary each): the
# main packages under functions/ (not its test files, which a wildcard picked up).
FUNCTIONS = $(notdir $(shell $(GO) list -f '{{if eq .Name "main"}}{{.Dir}}{{end}}' ./functions/...))

.DEFAULT_GOAL := help

.PHONY: help
help: ## List every target
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  \033[36m%-12s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

node_modules/.package-lock.json: package.json package-lock.json
	npm ci --no-audit --no-fund
	@touch $@

.PHONY: deps
deps: node_modules/.package-lock.json ## Install pinned node tooling (npm ci), DynamoDB Local (needs Java 17) and Go modules
	scripts/dynamodb-local.sh
	$(GO) mod download
	if [ -f infra/cdk/go.mod ]; then cd infra/cdk && $(GO) mod download; fi

.PHONY: dev
dev: deps ## Run the whole platform locally on embedded emulators (http://127.0.0.1:3000)
	$(GO) run ./cmd/evp-dev $(DEV_FLAGS)

.PHONY: test
test: deps ## Run every test: runtime (against the emulators) and the CDK app
	$(GO) vet ./...
	@# Both modules run even when the first fails, so one CI run shows every failure.
	rc=0; $(GO) test -count=1 -timeout 30m ./... || rc=1; \
		if [ -f infra/cdk/go.mod ]; then (cd infra/cdk && $(GO) test -count=1 -timeout 30m ./...) || rc=1; fi; \
		exit $$rc

.PHONY: fuzz
fuzz: deps ## Run every fuzz target for FUZZTIME each (default 30s); `make test` runs their committed corpora
	FUZZTIME=$(FUZZTIME) scripts/fuzz.sh

.PHONY: bench
bench: deps ## Run the benchmarks and write docs/benchmarks.md and docs/cost.md (what an event costs)
	@mkdir -p docs
	set -o pipefail; $(GO) test -run '^$$' -bench . -benchmem -count=1 -timeout 30m ./... | tee .bench.out
	$(GO) run ./cmd/benchreport < .bench.out > docs/benchmarks.md
	@rm -f .bench.out
	$(GO) test ./internal/local/suites -run '^TestCostPerPath$$' -count=1 -update-cost
	@echo "wrote docs/benchmarks.md, docs/cost.md and docs/cost-figures.json"

.PHONY: reliability
reliability: deps ## Run the reliability scenarios at full size (10,000 events for the first) and write docs/reliability.md
	mkdir -p .cache && set -o pipefail; $(GO) test ./internal/local/suites -run '^TestReliability' -count=1 -timeout 60m -v -reliability -reliability-report 2>&1 | tee .cache/reliability.log | grep -E '^(RELIABILITY|--- |ok|FAIL|PASS)|Error( Trace)?:|Messages:|_test.go:[0-9]+: '

.PHONY: throughput-curve
throughput-curve: deps ## Publish 100,000 events through the local stack (DynamoDB Local) and write its rate as the tables grow to docs/throughput-local.md
	set -o pipefail; $(GO) test ./internal/local/suites -run '^TestThroughputCurve$$' -count=1 -timeout 60m -v -throughput-curve=$(or $(EVENTS),100000) -throughput-dynamodb=$(or $(EVP_DYNAMODB),local) | grep -E '^(THROUGHPUT|\||--- |ok|FAIL|PASS)'

.PHONY: import-throughput
import-throughput: deps ## Import a file of RECORDS (default 100,000) audit envelopes on the local stack (DynamoDB Local) and print the rate, the time until every record is archived, calls per record and load average (docs/jobs.md)
	set -o pipefail; EVP_REQUIRE_DYNAMODB_LOCAL=1 $(GO) test ./internal/local/devstack -run '^TestImportThroughput$$' -count=1 -timeout 120m -v -import-throughput=$(or $(RECORDS),100000) | grep -E '^ *(import_throughput_test|--- |ok|FAIL|PASS)'

.PHONY: measure-export
measure-export: deps ## Measure the peak RSS of a tenant export of 200 events of 1 MiB against jobs-worker's deployed memory (docs/jobs.md)
	$(GO) test ./internal/jobkinds -run '^TestExportPeakRSS$$' -count=1 -timeout 20m -v -export-rss | grep -E 'peak RSS|--- |ok|FAIL'

.PHONY: console-shots
console-shots: deps ## Screenshot the operations console (docs/console-*.png) in headless Chromium
	$(GO) test ./internal/local/suites -run '^TestConsole(InABrowser|OperatorPagesInABrowser)$$' -count=1 -console-shots

.PHONY: build
build: ## Build every Lambda (linux/arm64 bootstrap binaries under bin/), the evp CLI and evp-dev (the local stack)
	@for fn in $(FUNCTIONS); do \
		echo "build functions/$$fn"; \
		CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build -trimpath -tags lambda.norpc -ldflags='-s -w' \
			-o bin/$$fn/bootstrap ./functions/$$fn || exit 1; \
	done
	$(GO) build -o bin/evp ./cmd/evp
	$(GO) build -o bin/evp-dev ./cmd/evp-dev

.PHONY: lint
lint: ## gofmt and go vet, both modules
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	if [ -f infra/cdk/go.mod ]; then cd infra/cdk && $(GO) vet ./...; fi

# The stage's settings file, when there is one: infra/cdk/stages/<stage>.json
# (copy infra/cdk/stages/prod.example.json for a production stage).
STAGE_FILE ?= $(wildcard infra/cdk/stages/$(STAGE).json)
CDK_STAGE = -c stage=$(STAGE) $(if $(STAGE_FILE),-c evp:stageFile=$(STAGE_FILE)) $(CDK_FLAGS)

.PHONY: cdk-app
cdk-app:
	cd infra/cdk && $(GO) build -o ../../bin/cdk-app .

.PHONY: synth
synth: deps build cdk-app ## Synthesize and cdk-nag-check STAGE (default dev; STAGE_FILE=… for a settings file) into cdk.out/STAGE
	npx cdk synth $(CDK_STAGE) --quiet -o cdk.out/$(STAGE)

.PHONY: validate
validate: deps ## Check every synthesized template (make synth first) against the CloudFormation spec, the ASL validators, cycles, name limits and cross-stage name collisions
	@set -- cdk.out/*/evp-*.template.json; [ -e "$$1" ] || { echo "make validate: no templates under cdk.out/<stage>/: run make synth first"; exit 1; }; \
		node scripts/validate/validate-templates.mjs "$$@"

.PHONY: boot-check
boot-check: deps ## Boot every Lambda's bootstrap under AWS's Runtime Interface Emulator with its synthesized dev environment, against the local stack
	EVP_BOOT_CHECK=1 $(GO) test ./internal/local/bootcheck -run '^TestArtifactsBoot$$' -count=1 -timeout 20m

.PHONY: bench-smoke
bench-smoke: deps ## Run every benchmark once (-benchtime=1x, results discarded) so none rots unnoticed
	@mkdir -p .cache
	set -o pipefail; $(GO) test -run '^$$' -bench . -benchtime=1x -count=1 -timeout 30m ./... > .cache/bench-smoke.log 2>&1 || { grep -E -B2 -A20 'FAIL|panic' .cache/bench-smoke.log | head -200; exit 1; }
	cd infra/cdk && $(GO) test -run '^$$' -bench . -benchtime=1x -count=1 ./... > /dev/null
	@echo "every benchmark ran once (log: .cache/bench-smoke.log)"

.PHONY: deploy
deploy: deps build cdk-app ## Deploy STAGE to the current AWS account (make deploy STAGE=prod; settings from infra/cdk/stages/STAGE.json)
	npx cdk deploy $(CDK_STAGE) -o cdk.out/$(STAGE) --all --require-approval broadening

.PHONY: destroy
destroy: deps build cdk-app ## Delete STAGE's stack (retained tables and buckets stay; docs/deploy.md#teardown)
	npx cdk destroy $(CDK_STAGE) -o cdk.out/$(STAGE) --all

.PHONY: fresh
fresh: ## Run CI (.ci/run) on a fresh clone of HEAD in a temp dir, as CI does
	scripts/fresh-clone-ci.sh

.PHONY: clean
clean: ## Remove build outputs
	rm -rf bin cdk.out .bench.out
