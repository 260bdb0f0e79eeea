# The index of habits: each target does one obvious thing.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PEERS  := tests/peers
EXTRAS := test,bench,gateway,gateway-granian,gateway-redis,oauth,otel,lint,docs,toml

.PHONY: install peers test demo bench lint docs clean

install: $(VENV)/.installed                       ## a venv in .venv with raider_sync editable

$(VENV)/.installed: setup.cfg setup.py constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -c constraints.txt -e '.[$(EXTRAS)]'
	touch $@

peers: $(PEERS)/node_modules/.installed           ## the npm test peers, pinned by the lock file

$(PEERS)/node_modules/.installed: $(PEERS)/package.json $(PEERS)/package-lock.json
	npm ci --prefix $(PEERS) --no-audit --no-fund --loglevel=error
	touch $@

test: install peers                               ## the whole suite, in parallel
	$(PY) -m pytest -n auto

demo: install                                     ## the main job on the embedded default
	$(VENV)/bin/raider-sync demo

bench: install peers                              ## raider_sync against the official SDK
	$(PY) -m bench $(LEGS)

# `make bench serving http`: the words after bench are the legs to run (none: every leg)
ifeq (bench,$(firstword $(MAKECMDGOALS)))
  LEGS := $(wordlist 2,$(words $(MAKECMDGOALS)),$(MAKECMDGOALS))
  ifneq ($(LEGS),)
    $(eval $(LEGS):;@:)
  endif
endif

lint: install                                     ## ruff, the import contracts, mypy (setup.cfg)
	$(VENV)/bin/ruff check raider_sync tests bench
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy

docs: install                                     ## the manual in docs/_build/html, warnings as errors
	$(VENV)/bin/sphinx-build -W --keep-going -b html docs docs/_build/html

clean:
	rm -rf $(VENV) $(PEERS)/node_modules build *.egg-info docs/_build
