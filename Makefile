# Two entry points for a fresh machine: `make train` (the guide model on MNIST) and `make test`.
VENV  ?= .venv
PY    := $(VENV)/bin/python
# Torch comes first so a machine's local wheel (or a CUDA/CPU index of your choice) is used.
TORCH ?= torch torchvision
# The extras a development checkout installs. docs/installation.md says what each brings; README.md and
# docs/getting-started.md quote this list (tests/journeys/test_docs_commands.py checks all against pyproject.toml).
EXTRAS := test,plot,optuna,examples,loggers,system,s3-test,docs,huggingface,dataframe
DATA  ?= $(if $(wildcard ../shared/data/MNIST),$(abspath ../shared/data),$(abspath data))

.PHONY: install train test test-lowest lint docs wheel bench mutation mutation-full

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet $(TORCH)
	$(PY) -m pip install --quiet -e ".[$(EXTRAS)]"
	touch $@

install: $(VENV)/.installed

train: install
	BURNLIKE_DATA=$(DATA) $(PY) train.py model=mnist trainer.devices=1

test: install
	BURNLIKE_DATA=$(DATA) $(PY) -m pytest -q

# The lowest versions pyproject.toml allows (docs/installation.md), laid over the development venv
# first on PYTHONPATH (torch is too large to install twice), and the tests that depend on them.
LOWEST := lightning==2.5.1 torchmetrics==1.7.0 hydra-core==1.3.2 omegaconf==2.3.0 msgpack==1.0.5 \
          fsspec==2023.3.0 pillow==13.0.0
LOWEST_NEEDS := packaging==24.2  # what lightning 2.5.1 itself asks for (<25) and the venv's newer one isn't
LOWEST_TESTS := tests/test__lightning.py tests/train/test_module.py tests/train/test_renderer.py \
                tests/train/test_tracking.py tests/train/test_preemption.py tests/train/test_sharded.py \
                tests/data/dataset/test_decode.py

.venv-lowest/.installed: pyproject.toml Makefile $(VENV)/.installed
	rm -rf .venv-lowest
	$(PY) -m pip install --quiet --no-deps --target .venv-lowest $(LOWEST) $(LOWEST_NEEDS)
	touch $@

test-lowest: .venv-lowest/.installed
	PYTHONPATH=$(abspath .venv-lowest) BURNLIKE_DATA=$(DATA) $(PY) -m pytest -q -m "not slow" $(LOWEST_TESTS)

lint: install
	$(VENV)/bin/ruff check burnlike tests benchmarks train.py examples scripts
	$(VENV)/bin/mypy   # --strict over burnlike ([tool.mypy] in pyproject.toml)

# The docs site (mkdocs.yml) into build/site, offline, every warning an error: a broken link or anchor,
# or an API reference entry that doesn't resolve, fails. The Hydra keys page and the API reference
# are generated while it builds (docs/hooks/).
docs: install
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict  # not --quiet: it hides the warnings strict counts

# burnlike is pure Python: one py3-none-any wheel, no compiler (issue 9). Offline: the venv's setuptools.
wheel: install
	rm -rf build/wheel
	$(PY) -m pip wheel --quiet --no-deps --no-build-isolation -w build/wheel .
	@set -- build/wheel/*; if [ $$# -eq 1 ] && [ "$${1%-py3-none-any.whl}" != "$$1" ]; then echo "wheel: $$1"; \
	else echo "expected one py3-none-any wheel, got: $$*"; exit 1; fi

bench: install
	BURNLIKE_DATA=$(DATA) $(PY) benchmarks/train_overhead.py
	BURNLIKE_DATA=$(DATA) $(PY) benchmarks/data_pipeline.py
	$(PY) benchmarks/data_pipeline.py --image-folder
	$(PY) benchmarks/records.py
	$(PY) benchmarks/startup.py

# Not in CI. A seeded random 250 mutants per package (score with a 95% interval; ~30-60 min on 2
# cores); `make mutation-full`: all ~14.5k mutants (many hours; `--only burnlike.optim` for one package).
mutation: install
	$(PY) -m pip install --quiet -e ".[mutation,loggers]"  # the logger integrations are mutated too
	BURNLIKE_DATA=$(DATA) $(PY) scripts/mutation.py --sample 250 --recheck

mutation-full: install
	$(PY) -m pip install --quiet -e ".[mutation,loggers]"  # the logger integrations are mutated too
	BURNLIKE_DATA=$(DATA) $(PY) scripts/mutation.py
