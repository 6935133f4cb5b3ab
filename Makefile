# msk-hudi-sink — the two commands a user needs:
#   make demo   run the sink on the embedded default (local table, in-process coordinator, no AWS)
#   make test   build everything and run every test (creates .venv with the pinned independent readers)

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
VENV_PY := $(CURDIR)/$(VENV)/bin/python
CARGO ?= cargo
DEMO_DIR ?= $(CURDIR)/target/demo

.PHONY: demo test venv lint fmt bench clean-demo

$(VENV)/.stamp: tests/python/requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r tests/python/requirements.txt
	touch $@

venv: $(VENV)/.stamp

demo: venv
	rm -rf $(DEMO_DIR)
	$(CARGO) run --quiet -p hudi-sink-cli --bin hudi-sink -- demo --base-path $(DEMO_DIR)/trips
	$(VENV_PY) tests/python/hudi_read.py --pretty $(DEMO_DIR)/trips snapshot

test: venv
	HUDI_SINK_PYTHON=$(VENV_PY) $(CARGO) test --workspace --all-targets
	HUDI_SINK_PYTHON=$(VENV_PY) $(CARGO) test --workspace --doc

lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

fmt:
	$(CARGO) fmt --all

bench:
	$(CARGO) bench -p hudi-sink --bench format
