# guilds: sandbox tool helpers and their orchestrator. `make` lists the targets.
.DEFAULT_GOAL := help
SHELL := /bin/bash

BIN        := $(CURDIR)/bin
TOOLS_BIN  := $(CURDIR)/tools/node_modules/.bin
export PATH := $(TOOLS_BIN):$(PATH)
export GUILDS_TOOLS_DIR := $(TOOLS_BIN)
export GUILDS_BIN_DIR := $(BIN)
export PLAYWRIGHT_NODEJS_PATH ?= $(shell command -v node)
# A -race binary sleeps a second before it exits (the race runtime's atexit_sleep_ms); tests that
# run their own binary as a helper, once per tool call, would wait that second each time.
export GORACE ?= atexit_sleep_ms=0

MODULES    := ./shared/... ./helpers/guilds-code/... ./helpers/guilds-browser/... \
              ./helpers/guilds-script-run/... ./helpers/guilds-git-credential/... ./orchestrator/...
STATIC     := -tags netgo,osusergo -trimpath -ldflags '-s -w -linkmode external -extldflags -static'
PURE       := -tags netgo,osusergo -trimpath -ldflags '-s -w'
GOTEST     ?= go test
TESTFLAGS  ?= -race -count=1 -timeout 30m

.PHONY: help setup build test bench update run image image-rootfs fmt vet clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-13s %s\n", $$1, $$2}'

setup: ## install what this machine lacks (idempotent, quick when nothing is missing)
	@./scripts/setup.sh

build: ## build every binary into ./bin
	@mkdir -p $(BIN)
	@set -e; for dir in helpers/*/; do name=$$(basename $$dir); [ -f $$dir/main.go ] || continue; \
	  echo "go build $$name"; CGO_ENABLED=0 go build $(PURE) -o $(BIN)/$$name ./$$dir; done
	@echo "go build guilds-code-parse (tree-sitter, static cgo)"; \
	  CGO_ENABLED=1 go build $(STATIC) -o $(BIN)/guilds-code-parse ./helpers/guilds-code/cmd/guilds-code-parse
	@if [ -d orchestrator/cmd/orchestrator ]; then echo "go build orchestrator guilds-sandboxd"; \
	  CGO_ENABLED=0 go build -trimpath -o $(BIN)/orchestrator ./orchestrator/cmd/orchestrator && \
	  CGO_ENABLED=0 go build $(PURE) -o $(BIN)/guilds-sandboxd ./orchestrator/cmd/guilds-sandboxd; fi

test: setup build ## run every module's tests (installs what is missing first)
	$(GOTEST) $(TESTFLAGS) $(MODULES)

bench: setup build ## run the benchmarks; each prints its ratio against the raw engine or best alternative
	$(GOTEST) -run '^$$' -bench . -benchtime 1x -count 1 -timeout 60m $(MODULES)

update: setup build ## rewrite golden files from the current behaviour
	$(GOTEST) -count=1 $$(grep -rl --include='*_test.go' 'flag.Bool("update"' . | xargs -r -n1 dirname | sort -u | sed 's|^|./|') -update

run: setup build ## start the orchestrator on its embedded PostgreSQL, agents sandboxed by bubblewrap
	@./scripts/run.sh

IMAGE        ?= guilds-sandbox
IMAGE_ROOTFS ?= $(CURDIR)/.data/image-rootfs

image-rootfs: build ## stage the sandbox image's layout into .data/image-rootfs (no Docker needed)
	@./image/stage.sh $(IMAGE_ROOTFS)

image: image-rootfs ## build the sandbox image (needs Docker) from image/Dockerfile
	@docker info >/dev/null 2>&1 || { echo "make image needs a running Docker engine (none answers here); make image-rootfs stages the same layout into a folder"; exit 1; }
	docker build -t $(IMAGE) -f image/Dockerfile $(IMAGE_ROOTFS)

fmt: ## format the Go code
	gofmt -w shared helpers orchestrator

vet: ## vet every module
	go vet $(MODULES)

clean: ## remove built binaries (keeps the Go cache and .data)
	rm -rf $(BIN)
