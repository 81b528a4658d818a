# The README's two commands are `make demo` and `make test`; both set the machine up first.
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: setup demo test bench constraints

setup:
	@bash .ci/bootstrap

demo: setup
	$(VENV)/bin/kopycat dev demo

# The docs site first (a second or two): `--strict` fails on any warning, a broken link between
# pages or a generated reference page that no longer builds included.
# Then ruff, and two worker processes (pytest-xdist), a test file each at a time: the integration tests spend
# much of their time waiting on brokers, Spark and Airflow subprocesses, so two share 2 cores
# well. Each worker starts its own services (tests/conftest.py's session fixtures).
test: setup
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet
	$(VENV)/bin/ruff check . && $(PY) -m pytest -n 2 --dist loadfile --durations=25

bench: setup
	$(PY) -m bench

# Re-pin every dependency after changing pyproject.toml (keeps existing pins where they fit).
constraints: setup
	$(VENV)/bin/uv pip compile -q --python-version 3.11 --extra dev pyproject.toml \
		-o include/requirements/constraints.txt
