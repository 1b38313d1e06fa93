# gb10.serving: every entry point a developer or CI needs.
#   make demo    build the lab, run site.yml against it, print the facts and the bench report
#   make test    every test (lint, sanity, units, integration, Molecule), with each stage's
#                wall time and the ten slowest tests at the end
#   make test-fast  lint, sanity, units and pytest: everything that needs no lab
#   make docs    regenerate docs/ (role pages, index, troubleshooting) from the sources
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
VENV := .venv
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
export ANSIBLE_FORCE_COLOR := 0
LAB_INVENTORY := inventory/lab

.PHONY: setup lab-up lab-down demo test test-fast lint sanity units pytest-unit integration molecule bench docs clean

setup:
	scripts/setup.sh

lab-up: setup
	python3 lab/labctl.py up

lab-down:
	python3 lab/labctl.py down --purge

demo: lab-up
	ansible-playbook -i $(LAB_INVENTORY) site.yml
	ansible-playbook -i $(LAB_INVENTORY) playbooks/report.yml
	@# site.yml measures each deployment once; print the report of the one that runs now.
	@fingerprint=$$(docker inspect -f '{{index .Config.Labels "io.gb10-serving.deployment"}}' \
	  gb10-lab-node0-vllm | cut -c1-12) && \
	  latest=$$(ls -d reports/*-"$$fingerprint"/bench.md | sort | tail -n 1) && \
	  echo "== $$latest" && cat "$$latest"

# Setup is the first stage of the run, timed like the others.
test:
	scripts/test.sh

test-fast:
	scripts/test.sh setup fast

lint: setup
	scripts/test.sh lint

sanity: setup
	scripts/test.sh sanity

units: setup
	scripts/test.sh units

integration: setup
	scripts/test.sh integration

molecule: setup
	scripts/test.sh molecule

bench: setup
	scripts/bench.sh

# Needs only PyYAML (the dev venv has it); tests/packaging/test_docs.py fails when the
# committed pages differ from what this writes.
docs:
	python3 scripts/gen_docs.py

clean: lab-down
	rm -rf build .cache .venv
