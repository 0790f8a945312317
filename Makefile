# Event platform: every developer entry point. `make help` lists the targets.
SHELL := /bin/bash
GO    ?= go
STAGE ?= dev
# What `evp --version` says a `make build` is (git describe of the checkout).
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo unknown)
FUZZTIME ?= 30s
export JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION := 1
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 1
# Everything that runs node (npm ci, the CDK CLI and the CDK app's jsii
# runtime, the template validators, the SQS emulator fauxqs that tests and
# the local stack start) runs under WITH_NODE: the machine's node when it is
# 22 or later, else the pinned Node 24 LTS it installs into .cache/node
# (docs/deploy.md#prerequisites; node 20 is end of life).
WITH_NODE := $(CURDIR)/scripts/with-node.sh
# Lambda functions built by `make build` (one bootstrap binary each): the
# main packages under functions/ (not its test files, which a wildcard picked up).
FUNCTIONS = $(notdir $(shell $(GO) list -f '{{if eq .Name "main"}}{{.Dir}}{{end}}' ./functions/...))

.DEFAULT_GOAL := help

.PHONY: help
help: ## List every target
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  \033[36m%-12s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

node_modules/.package-lock.json: package.json package-lock.json
	$(WITH_NODE) npm ci --no-audit --no-fund
	@touch $@

.PHONY: deps
deps: node_modules/.package-lock.json ## Install a supported node if the machine's is older than 22, the pinned node tooling (npm ci), DynamoDB Local (needs Java 17) and Go modules
	@echo "node tooling runs on $$($(WITH_NODE) --print)"
	scripts/dynamodb-local.sh
	$(GO) mod download
	if [ -f infra/cdk/go.mod ]; then cd infra/cdk && $(GO) mod download; fi

.PHONY: dev
dev: deps ## Run the whole platform locally on embedded emulators (http://127.0.0.1:3000)
	@GO=$(GO) scripts/dev-build.sh bin/evp-dev
	@echo "make dev: starting the local stack (emulators, tables, queues, every function); the banner follows"
	$(WITH_NODE) bin/evp-dev $(DEV_FLAGS)

# The IAM check (docs/iam.md): the local stacks of `make test` record every
# AWS call their functions make into IAM_CALLS (EVP_IAM_RECORD), stamped with
# the checkout's state; `make iam-check` judges them against cdk.out/STAGE,
# recording first when no stamp of this checkout is there.
IAM_CALLS := .cache/iam-calls
IAM_STAMP = $(shell { git rev-parse HEAD; git status --porcelain; } 2>/dev/null | sha1sum | cut -c1-16)
# The packages whose tests start a local stack: what records the calls.
IAM_RECORD_PKGS = $(GO) list -f '{{.ImportPath}}{{range .TestImports}} {{.}}{{end}}{{range .XTestImports}} {{.}}{{end}}' ./... | awk '/ github.com\/siteswarm\/eventplatform\/internal\/local\/devstack( |$$)/ {print $$1}'

.PHONY: test
test: deps ## Run every test: runtime (against the emulators) and the CDK app; records the functions' AWS calls for make iam-check
	$(GO) vet ./...
	@# Both modules run even when the first fails, so one CI run shows every failure.
	stamp=$(IAM_STAMP); rm -rf $(IAM_CALLS); \
		rc=0; EVP_IAM_RECORD=$(CURDIR)/$(IAM_CALLS) $(WITH_NODE) $(GO) test -count=1 -timeout 30m ./... || rc=1; \
		if [ $$rc = 0 ]; then mkdir -p $(IAM_CALLS) && echo "$$stamp" > $(IAM_CALLS)/STAMP; fi; \
		if [ -f infra/cdk/go.mod ]; then (cd infra/cdk && $(WITH_NODE) $(GO) test -count=1 -timeout 30m ./...) || rc=1; fi; \
		exit $$rc

.PHONY: iam-check
iam-check: deps ## Check every AWS call the functions make in the local runs against STAGE's synthesized roles (make synth first; reuses make test's recording)
	@tpl=cdk.out/$(STAGE)/evp-$(STAGE).template.json; [ -f "$$tpl" ] || { echo "make iam-check: no $$tpl: run make synth STAGE=$(STAGE) first"; exit 1; }
	@stamp=$(IAM_STAMP); if [ "$$(cat $(IAM_CALLS)/STAMP 2>/dev/null)" != "$$stamp" ]; then \
		echo "make iam-check: no recording of make test for this checkout: running the tests that start a local stack (log: .cache/iam-record.log)"; \
		rm -rf $(IAM_CALLS); mkdir -p .cache; \
		EVP_IAM_RECORD=$(CURDIR)/$(IAM_CALLS) $(WITH_NODE) $(GO) test -count=1 -timeout 30m $$($(IAM_RECORD_PKGS)) > .cache/iam-record.log 2>&1 || { grep -E -A20 '^(--- FAIL|FAIL|panic)' .cache/iam-record.log | head -100; exit 1; }; \
		echo "$$stamp" > $(IAM_CALLS)/STAMP; \
	fi
	$(WITH_NODE) $(GO) run ./cmd/iamcheck -template cdk.out/$(STAGE)/evp-$(STAGE).template.json -calls $(IAM_CALLS) \
		-details .cache/iam-check-$(STAGE).tsv $(if $(IAM_UPDATE),-update docs/iam.md)

.PHONY: fuzz
fuzz: deps ## Run every fuzz target for FUZZTIME each (default 30s); `make test` runs their committed corpora
	FUZZTIME=$(FUZZTIME) $(WITH_NODE) scripts/fuzz.sh

.PHONY: bench
bench: deps ## Run the benchmarks and write docs/benchmarks.md and docs/cost.md (what an event costs)
	@mkdir -p docs
	set -o pipefail; $(WITH_NODE) $(GO) test -run '^$$' -bench . -benchmem -count=1 -timeout 30m ./... | tee .bench.out
	$(GO) run ./cmd/benchreport < .bench.out > docs/benchmarks.md
	@rm -f .bench.out
	$(WITH_NODE) $(GO) test ./internal/local/suites -run '^TestCostPerPath$$' -count=1 -update-cost
	@echo "wrote docs/benchmarks.md, docs/cost.md and docs/cost-figures.json"

.PHONY: reliability
reliability: deps ## Run the reliability scenarios at full size (10,000 events for the first) and write docs/reliability.md
	mkdir -p .cache && set -o pipefail; $(WITH_NODE) $(GO) test ./internal/local/suites -run '^TestReliability' -count=1 -timeout 60m -v -reliability -reliability-report 2>&1 | tee .cache/reliability.log | grep -E '^(RELIABILITY|--- |ok|FAIL|PASS)|Error( Trace)?:|Messages:|_test.go:[0-9]+: '

.PHONY: throughput-curve
throughput-curve: deps ## Publish 100,000 events through the local stack (DynamoDB Local) and write its rate as the tables grow to docs/throughput-local.md
	set -o pipefail; $(WITH_NODE) $(GO) test ./internal/local/suites -run '^TestThroughputCurve$$' -count=1 -timeout 60m -v -throughput-curve=$(or $(EVENTS),100000) -throughput-dynamodb=$(or $(EVP_DYNAMODB),local) | grep -E '^(THROUGHPUT|\||--- |ok|FAIL|PASS)'

.PHONY: import-throughput
import-throughput: deps ## Import a file of RECORDS (default 100,000) audit envelopes on the local stack (DynamoDB Local) and print the rate, the time until every record is archived, calls per record and load average (docs/jobs.md)
	set -o pipefail; EVP_REQUIRE_DYNAMODB_LOCAL=1 $(WITH_NODE) $(GO) test ./internal/local/devstack -run '^TestImportThroughput$$' -count=1 -timeout 120m -v -import-throughput=$(or $(RECORDS),100000) | grep -E '^ *(import_throughput_test|--- |ok|FAIL|PASS)'

.PHONY: measure-export
measure-export: deps ## Measure the peak RSS of a tenant export of 200 events of 1 MiB against jobs-worker's deployed memory (docs/jobs.md)
	$(WITH_NODE) $(GO) test ./internal/jobkinds -run '^TestExportPeakRSS$$' -count=1 -timeout 20m -v -export-rss | grep -E 'peak RSS|--- |ok|FAIL'

.PHONY: console-shots
console-shots: deps ## Screenshot the operations console (docs/console-*.png) in headless Chromium
	$(WITH_NODE) $(GO) test ./internal/local/suites -run '^TestConsole(InABrowser|SearchAndPagingInABrowser|OperatorPagesInABrowser)$$' -count=1 -console-shots

.PHONY: build
build: ## Build every Lambda (linux/arm64 bootstrap binaries under bin/), the evp CLI and evp-dev (the local stack)
	@for fn in $(FUNCTIONS); do \
		echo "build functions/$$fn"; \
		CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build -trimpath -tags lambda.norpc -ldflags='-s -w' \
			-o bin/$$fn/bootstrap ./functions/$$fn || exit 1; \
	done
	$(GO) build -ldflags='-X main.buildVersion=$(VERSION)' -o bin/evp ./cmd/evp
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
	$(WITH_NODE) npx cdk synth $(CDK_STAGE) --quiet -o cdk.out/$(STAGE)

.PHONY: validate
validate: deps ## Check every synthesized template (make synth first) against the CloudFormation spec, the ASL validators, cycles, name limits and cross-stage name collisions
	@set -- cdk.out/*/evp-*.template.json; [ -e "$$1" ] || { echo "make validate: no templates under cdk.out/<stage>/: run make synth first"; exit 1; }; \
		$(WITH_NODE) node scripts/validate/validate-templates.mjs "$$@"

.PHONY: boot-check
boot-check: deps ## Boot every Lambda's bootstrap under AWS's Runtime Interface Emulator with its synthesized dev environment, against the local stack, fire every schedule, and hold the template's rules, event source mappings and bucket notifications to the local stack's
	EVP_BOOT_CHECK=1 $(WITH_NODE) $(GO) test ./internal/local/bootcheck -run '^TestArtifactsBoot$$' -count=1 -timeout 20m

.PHONY: bench-smoke
bench-smoke: deps ## Run every benchmark once (-benchtime=1x, results discarded) so none rots unnoticed
	@mkdir -p .cache
	set -o pipefail; $(WITH_NODE) $(GO) test -run '^$$' -bench . -benchtime=1x -count=1 -timeout 30m ./... > .cache/bench-smoke.log 2>&1 || { grep -E -B2 -A20 'FAIL|panic' .cache/bench-smoke.log | head -200; exit 1; }
	cd infra/cdk && $(WITH_NODE) $(GO) test -run '^$$' -bench . -benchtime=1x -count=1 ./... > /dev/null
	@echo "every benchmark ran once (log: .cache/bench-smoke.log)"

.PHONY: deploy
deploy: deps build cdk-app ## Deploy STAGE to the current AWS account (make deploy STAGE=prod; settings from infra/cdk/stages/STAGE.json)
	$(WITH_NODE) npx cdk deploy $(CDK_STAGE) -o cdk.out/$(STAGE) --all --require-approval broadening

.PHONY: destroy
destroy: deps build cdk-app ## Delete STAGE's stack (retained tables and buckets stay; docs/deploy.md#teardown)
	$(WITH_NODE) npx cdk destroy $(CDK_STAGE) -o cdk.out/$(STAGE) --all

.PHONY: fresh
fresh: ## Run CI (.ci/run) on a fresh clone of HEAD in a temp dir, as CI does
	scripts/fresh-clone-ci.sh

.PHONY: clean
clean: ## Remove build outputs
	rm -rf bin cdk.out .bench.out
