# The two set-up commands of README.md: `make run` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test install system-deps lint typecheck pytest bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

# Debian packages the SIP tests talk to (SIPp); installed once, only when missing.
system-deps:
	@deploy/install-system-deps.sh

run: install
	$(BIN)/sipedge serve

lint: install
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

typecheck: install
	$(BIN)/mypy

pytest: install system-deps
	$(BIN)/pytest -q

test: lint typecheck pytest

# The load bench's peers (Kamailio, tcpdump; valgrind for bench.call_instructions) are installed
# only when missing; see bench/README.md.
bench: install system-deps
	$(BIN)/pip install -q -r bench/requirements.txt
	@command -v kamailio >/dev/null && command -v tcpdump >/dev/null && command -v valgrind >/dev/null || \
		apt-get install -y --no-install-recommends kamailio tcpdump valgrind
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache sipedge.db
