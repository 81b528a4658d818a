# The README's two commands are `make demo` and `make test`; both set the machine up first.
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: setup demo test bench

setup:
	@bash .ci/bootstrap

demo: setup
	$(VENV)/bin/kopycat dev demo

test: setup
	$(PY) -m pytest

bench: setup
	$(PY) -m bench
