# Two entry points for a fresh machine (Python >= 3.11, pip reaching PyPI):
#   make demo   create .venv, install deltalog + pyspark, run the Spark demo pipeline, then the kernel (Arrow) demo
#   make test   create .venv, install deltalog + test tools + pyspark, run ruff, mypy, pytest (kernel and Spark side by side)
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: demo demo-s3 spark-versions test test-property test-faults lint typecheck conformance bench docs clean

# uv (from PyPI, into the venv) installs and byte-compiles the packages with parallel downloads and workers:
# about 70 s on a fresh machine, against 120 s for pip's install and a compileall after it.
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check uv
	$(VENV)/bin/uv pip install -q --python $(PY) --compile-bytecode -e '.[test,spark]'
	touch $@

# azurite (Azure's blob emulator, from npm) for the object-store tests; moto comes with the test extras. Installed
# from scripts/azurite's lockfile (npm ci): an unpinned azurite@3 broke when one of its dependencies' new releases
# needed a package version the registry did not serve yet.
AZURITE := .tools/node_modules/.bin/azurite-blob
$(AZURITE): scripts/azurite/package.json scripts/azurite/package-lock.json
	mkdir -p .tools
	cp scripts/azurite/package.json scripts/azurite/package-lock.json .tools/
	npm ci --prefix .tools --no-audit --no-fund --loglevel=error

# Debian's Chromium, for the test that renders the HTML health report in a real headless browser
# (tests/health/test_health_report_browser.py); installed with apt-get when missing (about half a minute).
CHROMIUM := /usr/bin/chromium
$(CHROMIUM):
	$$( [ "$$(id -u)" = 0 ] || echo sudo ) sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -qq --no-install-recommends chromium > /dev/null'

# A class-data-sharing archive of Spark's start-up classes for the JVMs the tests start (scripts/spark_cds.py:
# about half of a short-lived JVM's start-up CPU; tests/conftest.py passes it on, and a JVM started before
# it exists goes without). make test writes it beside the first tests, before the own_jvm tests start.
SPARK_CDS := .tools/spark-cds.jsa
$(SPARK_CDS): $(VENV)/.installed
	@PYTHONPATH=src $(PY) scripts/spark_cds.py $@ 2>&1 | grep '^spark_cds' || true

demo: $(VENV)/.installed
	$(PY) scripts/demo_spark.py
	$(PY) scripts/demo.py

# The object-store demo: a local S3 emulator (moto), the kernel, the CLI and Spark on s3:// / s3a://.
demo-s3: $(VENV)/.installed
	$(PY) scripts/demo_s3.py

lint: $(VENV)/.installed
	$(PY) -m ruff check --no-cache src tests bench scripts

typecheck: $(VENV)/.installed
	$(PY) -m mypy

# DELTALOG_STRICT=1: a skipped test fails (no Java, no corpus, no deltalake must not pass as green).
# Two lanes: the kernel suite (no JVM) followed by the Spark tests that start their own Spark processes
# (marker own_jvm: programs, clusters, Connect, killed drivers) runs next to the Spark tests sharing one
# session, which mostly wait on the JVM; the first lane's output follows, and either failing fails the target.
# A few shared-session Spark tests (marker other_lane) run in the first lane, with a session of its own,
# so that the two lanes take about the same time.
# A third background job runs the Spark version lanes (scripts/spark_lanes.py): tests/spark/test_spark_everyday.py
# on every other supported PySpark (3.5, 4.0, 4.1, 4.2), each from a package directory cached outside the checkout
# and installed on first use; the shared-session lane runs the same module on the venv's PySpark. Every lane writes
# what each feature did, and the README's Spark version table must say the same (make spark-versions rewrites it).
# Each lane has its own --basetemp: two pytest processes sharing /tmp/pytest-of-<user> both clean up its old
# directories when they finish, and one removing what the other is removing fails the run.
# The set-up steps are independent of each other (pip, npm and apt), so they run side by side; ruff follows
# (a fraction of a second), and mypy (half a minute on one core) runs beside the two lanes, its output
# printed when it is done; any of the three failing fails the target.
# deltalog's own modules (and the benchmarks') are byte-compiled first: with PYTHONDONTWRITEBYTECODE=1
# (common in CI images) every process the suite starts (Spark's Python workers, the writer processes, the
# programs) would compile them again.
test:
	@$(MAKE) --no-print-directory -j3 lint $(AZURITE) $(CHROMIUM)
	@$(PY) -m compileall -q src bench
	@rm -f .kernel-tests.log .typecheck.log .lanes-tests.log; tmp=$$(mktemp -d "$${TMPDIR:-/tmp}/deltalog-tests.XXXXXX"); \
	$(MAKE) --no-print-directory $(SPARK_CDS) & cds=$$!; \
	$(PY) scripts/spark_lanes.py run --reports "$$tmp/lanes" > .lanes-tests.log 2>&1 & lanes=$$!; \
	$(PY) -m mypy > .typecheck.log 2>&1 & typecheck=$$!; \
	DELTALOG_STRICT=1 $(PY) -m pytest -q -m "not spark or own_jvm or other_lane" -p no:cacheprovider --durations=25 \
		--basetemp="$$tmp/kernel" > .kernel-tests.log 2>&1 & kernel=$$!; \
	echo "mypy (pid $$typecheck), the kernel suite and own-JVM Spark tests (pid $$kernel) run in the background;" \
		"shared-session Spark suite:"; \
	DELTALOG_STRICT=1 DELTALOG_LANE_REPORTS="$$tmp/lanes" $(PY) -m pytest -q -m "spark and not own_jvm and not other_lane" \
		-p no:cacheprovider \
		--durations=25 \
		--basetemp="$$tmp/spark" tests/spark; \
	spark=$$?; \
	wait $$cds; wait $$typecheck; typecheck=$$?; echo "mypy:"; cat .typecheck.log; rm -f .typecheck.log; \
	wait $$kernel; kernel=$$?; echo "kernel suite:"; cat .kernel-tests.log; rm -f .kernel-tests.log; \
	wait $$lanes; lanes=$$?; echo "Spark version lanes:"; cat .lanes-tests.log; rm -f .lanes-tests.log; \
	$(PY) scripts/spark_lanes.py check --reports "$$tmp/lanes"; versions=$$?; rm -rf "$$tmp"; \
	test $$spark -eq 0 -a $$kernel -eq 0 -a $$typecheck -eq 0 -a $$lanes -eq 0 -a $$versions -eq 0

# The row-level concurrency property test with 3,000 examples (make test runs 80).
test-property: $(VENV)/.installed
	DELTALOG_STRICT=1 DELTALOG_PROPERTY_EXAMPLES=3000 $(PY) -m pytest -q -p no:cacheprovider tests/unit/test_row_concurrency_property.py

# Every fault at every storage step of every operation (make test runs a sample that visits each step once).
test-faults: $(VENV)/.installed $(AZURITE)
	DELTALOG_STRICT=1 DELTALOG_FAULTS=all $(PY) -m pytest -q -p no:cacheprovider tests/faults tests/spark/test_spark_faults.py

# The Spark version lanes alone, and the README / docs/compatibility.md version table rewritten from their results.
spark-versions: $(VENV)/.installed
	rm -rf .lanes
	DELTALOG_LANE_REPORTS=.lanes $(PY) -m pytest -q -p no:cacheprovider tests/spark/test_spark_everyday.py
	$(PY) scripts/spark_lanes.py run --reports .lanes
	$(PY) scripts/spark_lanes.py table --reports .lanes

conformance: $(VENV)/.installed
	$(PY) -m pytest -q tests/conformance

docs: $(VENV)/.installed
	$(PY) scripts/conformance_report.py > docs/conformance.md

bench: $(VENV)/.installed
	$(PY) bench/run.py

clean:
	rm -rf $(VENV) .tools build src/*.egg-info .mypy_cache .ruff_cache
