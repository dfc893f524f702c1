# s3zip — one command each: `make demo` shows it work, `make test` runs every test.
SHELL := /bin/bash
GO    ?= go
# node_modules holds Go templates of the CDK CLI; they are not ours.
GOPKGS = $(shell $(GO) list -e ./... | grep -v /node_modules/)
FUNCTIONS := planner reader worker finalizer abort extract-planner extract-worker extract-finalizer extract-abort

.PHONY: all test test-long check vet gotest nodetest tools node lambdas plan demo local-s3 clean

all: test

## tools: ZIP readers (7zz, bsdtar, unzip) and the local S3 server (versitygw), once
tools:
	@bash tools/install.sh

## node: the CDK app's and the state machine tests' npm packages
node: node_modules/.installed
node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

## lambdas: the Lambda binaries (the create workflow with its reader, and the extract workflow), linux/arm64, for `cdk synth`/`cdk deploy`
## (LAMBDA_ARCH=amd64 LAMBDA_DIR=dir: the same build for this machine, as test-deployed runs them)
LAMBDA_ARCH ?= arm64
LAMBDA_DIR  ?= dist/functions
lambdas:
	@for f in $(FUNCTIONS); do \
	  mkdir -p $(LAMBDA_DIR)/$$f; \
	  CGO_ENABLED=0 GOOS=linux GOARCH=$(LAMBDA_ARCH) $(GO) build -tags lambda.norpc -trimpath -ldflags='-s -w' \
	    -o $(LAMBDA_DIR)/$$f/bootstrap ./functions/$$f || exit 1; \
	done

vet:
	$(GO) vet $(GOPKGS)
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	  if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi

# plan is pure (no goroutine, no lock: tests/layout holds it so), so the race
# detector has nothing to find there and only multiplies its ~100 s by six.
# tests/e2e runs whole archives through create and extract, whose own tests
# run under the race detector; raced, its runs took three to four times as
# long (TestCompressedDuoSeededRuns 160 s against 37 s), the largest share of
# CI's hour: it runs without.
gotest: tools node
	$(GO) test -race -timeout 30m $(filter-out %/tests/deployed %/plan %/tests/e2e,$(GOPKGS))  # test-deployed runs it
	$(GO) test -timeout 30m ./plan/ ./tests/e2e/

nodetest: node lambdas
	npm test

## check: go vet, gofmt and staticcheck (the version tools/install.sh pins, from .tools/bin; staticcheck.conf)
STATICCHECK ?= .tools/bin/staticcheck
check: vet
	@test -x $(STATICCHECK) || { echo "$(STATICCHECK) missing: run make tools"; exit 1; }
	$(STATICCHECK) $(GOPKGS)

## test: everything a newcomer runs; CI also runs test-long
test: tools check gotest nodetest test-faults test-deployed

## test-long: the end-to-end cases over 4 GiB (one a DEFLATE entry over 4 GiB), over 5 GiB and over 65,535 entries,
## verify of a 4 GiB DEFLATE entry Go's archive/zip wrote with data descriptors, every cell of the matrix, and the
## quick load guards (a 1,000,000-entry plan; the create planner's and finalizer's memory at a million entries
## against their Lambdas'), and auto against every fixed strategy at S3's rates up to 1,000,000 objects
QUICK_LOAD := ^TestLoad(1MEntryPlan|PlannerPerMillion|FinalizerPerMillion)$$
# SWEEP: auto against every fixed strategy at S3's rates (plan/auto_test.go): to 1 M objects in test-long, to 10 M in test-load
SWEEP := ^TestAutoIsTheFastestPlanAtEverySize$$
test-long: tools
	set -o pipefail; S3ZIP_LONG=1 $(GO) test -timeout 60m -run 'Over|MoreThan|MatrixEveryCell' -skip '$(HUGE_TESTS)' -v ./tests/e2e/ ./tests/extract/ ./zipread/ 2>&1 | grep -E '^(=== RUN|--- |PASS|FAIL|ok)|(e2e|extract|long|zip64)_test'
	set -o pipefail; S3ZIP_LONG=1 $(GO) test -timeout 60m -run '$(QUICK_LOAD)' -v ./tests/load/ 2>&1 | grep -vE '^20[0-9][0-9]/'
	S3ZIP_LONG=1 $(GO) test -timeout 30m -run '$(SWEEP)' ./plan/

## test-load: every load test (~18 minutes here, so CI runs only test-long's quick guards): a 100,000-entry archive end
## to end, plans past a million entries by every strategy, each handler's memory per million entries, create's and
## extract's, against its Lambda's; auto's sweep to 10,000,000 objects. Run it when a change touches what a handler
## holds per entry, or the cost model.
.PHONY: test-load
test-load: tools
	set -o pipefail; S3ZIP_LONG=1 $(GO) test -timeout 60m -run 'Load' -v ./tests/load/ 2>&1 | grep -vE '^20[0-9][0-9]/'
	S3ZIP_LONG=1 S3ZIP_SWEEP=all $(GO) test -timeout 60m -run '$(SWEEP)' ./plan/

## test-huge: what is slow and covered smaller elsewhere, so CI leaves it out (~25 minutes here): sources of ~1 GiB
## and over 5 GiB stored with the checksums versitygw answers copies of wrongly (CRC-32 composites, as the AWS CLI
## uploads big files; at 1/32 of the size in make test, TestSourceKindsLargerThanBudget), 65,540 entries built by
## every strategy (ZIP64 by entry count: plan's TestZip64Boundaries, and 100,000 entries end to end in test-load's
## TestLoad100kEntriesEndToEnd) and a chain of ~4,000 rounds (its work bucket bounded: TestChainDeletesConsumedRounds
## at 200 objects in make test)
HUGE_TESTS := SourceKindsOver|^TestMoreThan65535Entries$$|ChainOverThousandsOfTinyObjects
.PHONY: test-huge
test-huge: tools
	set -o pipefail; S3ZIP_LONG=1 $(GO) test -timeout 90m -run '$(HUGE_TESTS)' -v ./tests/e2e/ 2>&1 | grep -E '^(=== RUN|--- |PASS|FAIL|ok)|_test'

## plan: the cost of the challenge data set's plan, per strategy
plan:
	@for s in stream duo chain auto; do $(GO) run ./cmd/s3zip plan --strategy $$s --synthetic challenge --count 3000 --seed 1; echo; done

clean:
	rm -rf dist cdk.out infra/dist infra/.jsii infra/tsconfig.json

## package: the s3zip-cdk construct library packed into dist/s3zip-cdk-<version>.tgz: the constructs compiled
## (JS and .d.ts), the ASL files and the nine Lambda binaries for linux/arm64 (infra/README.md)
.PHONY: package
package: node
	@mkdir -p dist; npm pack -w infra --pack-destination dist

## test-package: the packed-construct test (tests/deployed/package_test.go): infra/ packed (nine arm64 binaries built), the
## tarball installed into a fresh CDK app outside the repository, synthesized and run through the harness; 73-519 s
## measured here (idle to load ~20). make test runs it too, in test-deployed; this runs it alone, before publishing
.PHONY: test-package
test-package: tools node
	set -o pipefail; $(GO) test -count=1 -timeout 15m -run 'TestDeployedPackedConstructs$$' -v ./tests/deployed/ 2>&1 | grep -vE 'justified: |^unused grant'

## cfn-template: s3zip as a standalone CloudFormation template, for deploying without CDK (docs/deploy.md, "Without CDK"):
## dist/cloudformation/s3zip.template.json with Parameters (source buckets and prefix, destination bucket and prefix, a KMS
## key, monitoring, the extract workflow's bucket and prefixes), and beside it the nine Lambda binaries (linux/arm64) and
## the ASL files it names by local path, which `aws cloudformation package` uploads (CFN_DIR=dir for another folder)
CFN_DIR ?= dist/cloudformation
.PHONY: cfn-template
cfn-template: node lambdas
	$(if $(filter arm64,$(LAMBDA_ARCH)),,$(error cfn-template: the template declares arm64 functions; leave LAMBDA_ARCH unset))
	@rm -rf $(CFN_DIR)
	npx tsx infra/bin/cfn-template.ts --out $(CFN_DIR) --functions $(LAMBDA_DIR)

## package-python: the same construct library built once by jsii into dist/jsii: js/s3zip-cdk@<version>.jsii.tgz (the npm
## tarball) and python/s3zip_cdk-<version>-py3-none-any.whl (jsii-pacmak; the tarball inside), for Python CDK apps
## (infra/README.md, "Python"); ~1.5 min
.PHONY: package-python
package-python: tools node
	bash infra/scripts/build-python.sh dist/jsii

## test-python: the Python test alone (tests/deployed/python_test.go): the wheel built, installed with aws-cdk-lib and
## constructs into a fresh virtualenv outside the repository, a Python app synthesized and its template compared with
## the TypeScript app's; 3 min here at load 6 (alone: it builds the package); make test runs it too, in test-deployed, where
## it shares test-package's build and adds ~1 min (the wheel, the virtualenv, the synth)
.PHONY: test-python
test-python: tools node
	set -o pipefail; $(GO) test -count=1 -timeout 15m -run 'TestPythonConstructs$$' -v ./tests/deployed/ 2>&1 | grep -vE 'justified: |^unused grant'

## install: the s3zip CLI built from this clone into BINDIR: where `go install ./cmd/s3zip` puts it, $(go env GOBIN),
## or $(go env GOPATH)/bin when GOBIN is unset; PREFIX=/usr/local installs into /usr/local/bin, BINDIR=DIR into DIR
.PHONY: install
ifdef PREFIX
BINDIR ?= $(PREFIX)/bin
endif
BINDIR ?= $(or $(shell $(GO) env GOBIN),$(shell $(GO) env GOPATH)/bin)
install:
	@mkdir -p "$(BINDIR)"
	$(GO) build -trimpath -o "$(BINDIR)/s3zip" ./cmd/s3zip
	@echo "installed $(BINDIR)/s3zip"
	@case ":$$PATH:" in *":$(BINDIR):"*) ;; *) echo "$(BINDIR) is not on your PATH: export PATH=\"$(BINDIR):\$$PATH\"";; esac

## release: the CLI cross-built for linux and darwin, amd64 and arm64, stamped with infra/package.json's version and the
## commit, one tar.gz a target (the binary, README.md, LICENSE) and SHA256SUMS, in dist/release/ (RELEASE_DIR,
## RELEASE_TARGETS="linux/amd64 …", VERSION override)
.PHONY: release
release:
	@RELEASE_DIR=$(or $(RELEASE_DIR),dist/release) RELEASE_TARGETS="$(or $(RELEASE_TARGETS),linux/amd64 linux/arm64 darwin/amd64 darwin/arm64)" \
	  GO=$(GO) bash scripts/release.sh

## demo: a real archive built here, against a local S3 server, in one command
demo:
	@bash scripts/demo.sh

## local-s3: the demo's S3 server kept running to try things; prints what to export (scripts/local-s3.sh stop stops it)
local-s3:
	@bash scripts/local-s3.sh

.PHONY: bench bench-quick bench-get
## bench: the server calibrated, then every strategy side by side at N = 1..32 workers, each a process in its own network namespace whose link is narrowed until the machine is 32 links wide, then the extract row (needs root; bench/README.md)
bench: tools
	@bash bench/run.sh full

## bench-compress: s3zip --compress deflate vs zip -6 on a generated text corpus (BENCH_COMPRESS_MB, default 256), and auto's cost on random data
.PHONY: bench-compress
bench-compress: tools
	@bash bench/compress.sh

## bench-quick: the same on 60 objects, one repetition, in under 4 minutes
bench-quick: tools
	@bash bench/run.sh quick

## bench-rates: stream, duo, chain and auto side by side with S3's request rates divided by F (BENCH_RATE_FACTOR, default
## 110) on the sources', the archive's and the work prefix, the model given the same rates: does it rank them as they
## measure, and how close is each prediction (200 objects, N = 16; writes docs/performance.md's section; needs root)
.PHONY: bench-rates
bench-rates: tools
	@bash bench/run.sh rates

## bench-get: downloads side by side (s3zip get, s5cmd, the SDK transfer manager; unshaped and on one 600 Mbit/s link), and 50,000 small objects by s5cmd cp against s3zip create + get (needs root)
bench-get: tools
	@bash bench/run.sh get

## test-faults: S3 500s, 503 SlowDown and ServiceUnavailable, 200 OK with an error body, timeouts and resets (before,
## after and mid-body) injected by a proxy in front of versitygw, killed workers, re-run finalizers and planners,
## changed sources, racing runs; prints a table
.PHONY: test-faults
test-faults: tools
	@set -o pipefail; S3ZIP_FAULTS=1 $(GO) test -count=1 -timeout 25m -v ./tests/faults/ 2>&1 \
	  | grep -E '^(\||[0-9]+ scenarios|--- FAIL|FAIL|ok|panic)|scenario failed'

## test-stalls: what six stalled GETs cost a create and an extract of 20,000 small objects (S3ZIP_STALL_OBJECTS=n for
## another count) at S3's rates scaled to 200 GET/s and 100 other requests a second, against the same runs clean; prints
## the times and fails over 1.2× (not part of `make test`: about 15 minutes here)
.PHONY: test-stalls
test-stalls: tools
	@set -o pipefail; S3ZIP_FAULTS=1 S3ZIP_LONG=1 $(GO) test -count=1 -timeout 60m -run 'TestStallCost$$' -v ./tests/faults/ 2>&1 \
	  | grep -E 'stallcost_test|^(--- |FAIL|ok|panic)'

## test-resume: a create of 100,000 objects and an extract of its 100,000 entries (S3ZIP_RESUME_OBJECTS=n for another
## number), each failed by a fault at about 80 % and resumed: parts built, built twice and time for both (not part of
## `make test` or CI: minutes and gigabytes; make test runs the small versions)
.PHONY: test-resume
test-resume: tools
	@set -o pipefail; S3ZIP_LONG=1 $(GO) test -count=1 -timeout 120m -v ./tests/resume/ 2>&1 | grep -E '^(--- |FAIL|ok|panic)|resume_test.go:[0-9]+:'

## test-scale: 1,000,000 small objects (S3ZIP_SCALE_OBJECTS=n for fewer) archived through the deployed template,
## under S3's request rates divided by S3ZIP_RATE_FACTOR (503 SlowDown past them; 0: none),
## two readers and every entry's CRC-32 and size checked, each function's peak RSS against its memory; ends with the
## `scale:` line (not part of `make test`: about an hour and 22 GiB of disk at 1 M, measured; docs/performance.md "A million objects as deployed")
S3ZIP_RATE_FACTOR ?= 10
.PHONY: test-scale
test-scale: tools node
	@mkdir -p dist; S3ZIP_SCALE=1 S3ZIP_RATE_FACTOR=$(S3ZIP_RATE_FACTOR) $(GO) test -count=1 -timeout 6h -run 'TestDeployedScale$$' -v ./tests/deployed/ > dist/test-scale.log 2>&1; rc=$$?; \
	  grep -E '^(--- |FAIL|ok|panic)|scale_test.go:[0-9]+:' dist/test-scale.log; \
	  if [ $$rc != 0 ]; then echo "whole log: dist/test-scale.log"; fi; \
	  grep -E '^scale:' dist/test-scale.log; exit $$rc

## test-scale-extract: an archive of 1,000,000 small entries written by Python's zipfile (S3ZIP_SCALE_EXTRACT_ENTRIES=n
## for another count) extracted through the deployed template's extract state machine, under S3's rates / S3ZIP_RATE_FACTOR;
## every object's bytes and Content-Type checked, nothing left, each function's peak RSS against its memory; ends with
## the `extract-scale:` line (not part of `make test`; docs/performance.md "A million entries extracted as deployed")
.PHONY: test-scale-extract
test-scale-extract: tools node
	@mkdir -p dist; S3ZIP_SCALE_EXTRACT=1 S3ZIP_RATE_FACTOR=$(S3ZIP_RATE_FACTOR) $(GO) test -count=1 -timeout 6h -run 'TestDeployedExtractScale$$' -v ./tests/deployed/ > dist/test-scale-extract.log 2>&1; rc=$$?; \
	  grep -E '^(--- |FAIL|ok|panic)|extractscale_test.go:[0-9]+:' dist/test-scale-extract.log; \
	  if [ $$rc != 0 ]; then echo "whole log: dist/test-scale-extract.log"; fi; \
	  grep -E '^extract-scale:' dist/test-scale-extract.log; exit $$rc

## test-scale-extract-plan: the extract planner alone over an archive of 10,000,000 entries (archive/zip, in a file
## served by the in-memory S3), its peak memory against its Lambda's; ~1.8 GB of disk, a few minutes
.PHONY: test-scale-extract-plan
test-scale-extract-plan: tools
	set -o pipefail; S3ZIP_LONG=1 $(GO) test -count=1 -timeout 60m -run 'TestExtractPlannerAtTenMillion' -v ./tests/load/ 2>&1 | grep -vE '^20[0-9][0-9]/'

## test-deployed: the synthesized template run here — the packaged bootstrap binaries (built for this
## machine) as Lambda processes, the definition after DefinitionSubstitutions, the EventBridge rule,
## every S3/Lambda/Step Functions call checked against its role, cfn-lint; then the standalone CloudFormation template
## (make cfn-template) packaged by `aws cloudformation package` and run the same way (tests/deployed/README.md)
.PHONY: test-deployed
test-deployed: tools node
	@mkdir -p dist; $(GO) test -count=1 -timeout 20m -v ./tests/deployed/ > dist/test-deployed.log 2>&1; rc=$$?; \
	  grep -E '^(--- |    --- |FAIL|ok|panic|unused grant|not exercisable)|_test.go:[0-9]+: (denied|execution)' dist/test-deployed.log; \
	  if [ $$rc != 0 ]; then echo "failures (whole log: dist/test-deployed.log):"; grep -E -B40 '^\s*--- FAIL' dist/test-deployed.log | head -300; fi; \
	  grep -E '^deployed:' dist/test-deployed.log; exit $$rc
