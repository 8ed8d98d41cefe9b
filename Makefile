# Task runner for the attention course kit. `make demo` runs the main job, `make test` every test.
# Both create the virtual environment first if it is missing, from the lock (requirements/kit.txt: every
# package at one version, with its hashes, for Linux x86-64 and CPython 3.11; `make lock` refreshes it).

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# Locked installs: every package from a lock, hashes checked, wheels only (nothing built with tools the lock
# does not hold); then the two local packages, without their dependencies (the lock has them), and a check
# that the environment holds its lock and nothing else (attnkit_grader.locks).
LOCKED := $(PY) -m pip install --quiet --disable-pip-version-check --require-hashes --only-binary :all: -r
LAYERS := requirements/site.txt requirements/browser.txt
CHECK  := $(PY) -m attnkit_grader.locks check requirements/kit.txt --also $(LAYERS)

.PHONY: setup sandbox-tools demo test test-lectures test-lectures-all test-fast publish lab benchmark clean lock

setup: $(STAMP) sandbox-tools fonts mathjax

# The grader runs every submission under bubblewrap (Debian/Ubuntu package `bubblewrap`), with a system-call
# filter built by libseccomp (`libseccomp2`, present wherever apt is). As root, install what is missing (CI
# starts from a bare machine); otherwise say what is missing and carry on.
sandbox-tools:
	@{ command -v bwrap >/dev/null && ldconfig -p | grep -q libseccomp.so.2; } || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get install -y -qq bubblewrap libseccomp2 >/dev/null 2>&1 || \
	    { apt-get update -qq && apt-get install -y -qq bubblewrap libseccomp2; }; \
	  else echo "warning: bwrap or libseccomp2 not found: sandboxed grading needs them (apt-get install bubblewrap libseccomp2)"; fi; }

# The Chinese lectures label their figures in Chinese: matplotlib needs a CJK font, Debian/Ubuntu package
# `fonts-noto-cjk` (attnkit.plotting adds it as a fallback font). As root, install it when missing;
# otherwise say so and carry on (the figures then warn about missing glyphs).
.PHONY: fonts
fonts:
	@{ fc-list 2>/dev/null | grep -q "Noto Sans CJK" || [ -e /usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc ]; } || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get install -y -qq fonts-noto-cjk >/dev/null 2>&1 || \
	    { apt-get update -qq && apt-get install -y -qq fonts-noto-cjk; }; \
	  else echo "warning: no CJK font (Noto Sans CJK) found: Chinese figures need one (apt-get install fonts-noto-cjk)"; fi; }

# Feedback pages typeset their formulas when they are written (attnkit_grader.offline), with MathJax 3 from the npm
# registry, installed into the environment (share/attnkit/node_modules, where the grader looks) and run by Node.js,
# by `npm ci` from the committed lock (requirements/npm/mathjax). Without npm, say so and carry on: the pages then
# show their formulas as TeX, with a note saying why.
NPM_MATHJAX  := requirements/npm/mathjax
FEEDBACK_NPM := $(VENV)/share/attnkit
.PHONY: mathjax
mathjax: $(STAMP)
	@cmp -s $(NPM_MATHJAX)/package-lock.json $(FEEDBACK_NPM)/package-lock.json && \
	  test -f $(FEEDBACK_NPM)/node_modules/mathjax/es5/node-main.js || { \
	  if command -v npm >/dev/null && command -v node >/dev/null; then \
	    cp $(NPM_MATHJAX)/package.json $(NPM_MATHJAX)/package-lock.json $(FEEDBACK_NPM)/ && \
	    npm ci --prefix $(FEEDBACK_NPM) --no-audit --no-fund --silent; \
	  else echo "warning: Node.js with npm not found: feedback pages will show their formulas as TeX (install nodejs and npm, then make setup)"; fi; }

$(STAMP): requirements/kit.txt pyproject.toml lib/grader/pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@$(PY) -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' || { echo "error: $(VENV) is not CPython 3.11, \
	  the one Python the lock is made for (requirements/): make clean, then PYTHON=python3.11 make setup"; exit 1; }
	$(LOCKED) requirements/kit.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e . -e lib/grader
	$(CHECK)
	mkdir -p $(VENV)/share/attnkit && cp requirements/kit.txt $(VENV)/share/attnkit/lock.txt
	touch $@

# The locks from requirements/*.in (uv in build/lock-venv, made here), and the student pins (constraints.txt)
# from the hub's lock; then the npm locks. On purpose only: the contributors' guide says when; review the diff.
UV_VERSION := 0.13.8
lock:
	test -x build/lock-venv/bin/uv || { $(PYTHON) -m venv build/lock-venv && \
	  build/lock-venv/bin/python -m pip install --quiet --disable-pip-version-check uv==$(UV_VERSION); }
	UV=build/lock-venv/bin/uv PYTHON=$(PYTHON) sh requirements/lock.sh

# Library tests, notebook validation (nbval, strict) and the grading pipeline; then the lectures again
# under other CPU kernels and thread counts (their outputs must not depend on them). Two workers on two
# cores: one thread each (two workers with two threads each made lecture 4 train 20 times slower).
test: $(STAMP) sandbox-tools fonts mathjax
	OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) -m pytest -n 2 --dist loadfile -m "not kernels" --nbval \
	  --nbval-current-env tests course
	$(MAKE) --no-print-directory test-lectures

# nbval over the lectures with the kernels forced to SSE4.2 + 1 thread and to AVX2 + 2 threads, in parallel.
test-lectures: $(STAMP)
	$(PY) -m pytest -n 2 -m kernels tests/test_lectures_on_other_kernels.py

# The same with every kernel variable alone as well (ATen default/avx2, MKL AVX2/SSE4_2, 1/2 threads).
test-lectures-all: $(STAMP)
	LECTURE_KERNELS=all $(PY) -m pytest -n 2 -m kernels tests/test_lectures_on_other_kernels.py

# Library tests only: the quick loop while editing lib/.
test-fast: $(STAMP)
	$(PY) -m pytest -n 2 tests -m "not slow and not kernels"

# The example class through the sandboxed grader: submitted/, autograded/ (for the formgrader), gradebook.db,
# grades/. A second run takes every verdict from the journal.
demo: $(STAMP) sandbox-tools mathjax
	$(PY) -m attnkit_grader demo

# The student edition (lectures, released assignments, the student package; no source/, no grader).
EDITION ?= build/student-edition
publish: $(STAMP)
	$(VENV)/bin/attnkit publish $(EDITION) --force

lab: $(STAMP)
	$(VENV)/bin/jupyter lab course

benchmark: $(STAMP)
	$(PY) benchmarks/attention.py

# Seconds per submission: plain sequential `nbgrader autograde` vs the sandboxed grader (pool and 1 worker; as
# root, the pool graded by an unprivileged uid too), on the example class scaled to 102 submissions (the endless
# loop in once), the floor (the cells' and probes' own CPU over the cores) and the goals. ARGS=--profile adds
# where the time went, ARGS=--cold the pool without warm starts.
.PHONY: benchmark-grading benchmark-autograde
benchmark-grading: $(STAMP) sandbox-tools
	$(PY) benchmarks/grading.py --copies 6 --one-worker $$([ "$$(id -u)" = 0 ] && echo --unprivileged) $(ARGS)

# The sandboxed grader on a Dask cluster on loopback (1 worker x 2 threads, 2 workers x 1 thread) against the
# pool at equal cores (fastest of two rounds), identical grades, the scheduler's round trip and a projection
# for 10,000 submissions.
.PHONY: benchmark-cluster
benchmark-cluster: $(STAMP) sandbox-tools
	$(PY) benchmarks/cluster.py --rounds 2

# Problem set 3's length-extrapolation experiment with the reference solutions: the CPU seconds of the notebook's
# cells (one thread), and each encoding's accuracy range over 5 seeds (the test's margins come from it).
.PHONY: benchmark-extrapolation
benchmark-extrapolation: $(STAMP)
	$(PY) benchmarks/extrapolation.py

# Seconds per submission of the nbgrader pipeline (issue 4's figures).
benchmark-autograde: $(STAMP)
	$(PY) benchmarks/autograde.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis

# The course on this machine (as root): JupyterHub with local users, nbgrader's exchange, the course's
# environment under /opt/attnkit-course built from the student edition (hub/course.py says what is where).
# `make hub-stop` stops the hub and every user's server; files and submissions stay.
.PHONY: hub hub-setup hub-stop hub-enrol browser-tools test-browser
HUB_PYTHON ?= /usr/bin/python3
hub: hub-setup
	$(HUB_PYTHON) hub/course.py start

hub-setup: publish sandbox-tools mathjax
	$(HUB_PYTHON) hub/course.py setup --edition $(EDITION)

hub-stop:
	$(HUB_PYTHON) hub/course.py stop

# Enrol a class from a roster (Canvas or Moodle export, or a CSV with an 'id' column): ROSTER=file.csv, and
# ENROL_FLAGS=--remove-demo to remove the demo students. First passwords: /opt/attnkit-course/state/.
hub-enrol:
	@test -n "$(ROSTER)" || { echo "error: ROSTER=file.csv is required (make hub-enrol ROSTER=roster.csv)"; exit 2; }
	$(HUB_PYTHON) hub/enrol.py "$(ROSTER)" --edition build/student-edition $(ENROL_FLAGS)

# The browser test's tools: Debian's chromium (as root, like bubblewrap; never a downloaded browser) and
# Playwright from PyPI in the kit's venv, from its lock (requirements/browser.txt).
browser-tools: $(STAMP)
	@command -v chromium >/dev/null || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get install -y -qq chromium >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq chromium; }; \
	  else echo "error: chromium not found (apt-get install chromium)"; exit 1; fi; }
	$(LOCKED) requirements/browser.txt
	$(CHECK)

# The course's whole path in Chromium (tests_browser/, as root): students fetch, type, validate and submit
# through JupyterLab on the hub; the instructor collects, grades and releases feedback; students read it;
# every lecture runs. Screenshots and the hub's log: build/browser-artifacts/.
test-browser: browser-tools hub-setup
	$(PY) -m pytest -p no:cacheprovider -p no:randomly -o addopts="-ra" tests_browser -v

# The course's website (site/, Sphinx + myst-nb + pydata-sphinx-theme, the `site` extra): the committed
# executed notebooks in English, French and Chinese, never re-executed, and the guide (site/pages/LANG/guide/),
# in build/site/ (one tree per language).
# MathJax 3 comes from the npm registry into build/site-npm/ and is served from the site itself. The build
# fails on any Sphinx warning and on a broken internal link or image (site/linkcheck.py).
.PHONY: site test-site
SITE_STAMP := $(VENV)/.site-installed
SITE_NPM   := build/site-npm
MATHJAX    := $(SITE_NPM)/node_modules/mathjax
# jieba publishes no wheel: it alone is built, from its hashed source, with the lock's setuptools (no build
# isolation, which would fetch whatever setuptools is newest).
$(SITE_STAMP): $(STAMP) requirements/site.txt
	$(LOCKED) requirements/site.txt --no-binary jieba --no-build-isolation
	$(CHECK)
	touch $@

$(MATHJAX)/es5/tex-mml-chtml.js: $(NPM_MATHJAX)/package-lock.json
	mkdir -p $(SITE_NPM)
	cp $(NPM_MATHJAX)/package.json $(NPM_MATHJAX)/package-lock.json $(SITE_NPM)/
	npm ci --prefix $(SITE_NPM) --no-audit --no-fund --silent

site: $(SITE_STAMP) $(MATHJAX)/es5/tex-mml-chtml.js
	$(PY) site/build.py --mathjax $(MATHJAX)

# The site in Chromium (tests_site/): each language's home page and a lecture, its figures, formulas,
# language switch and launch links, and its search, with every request off 127.0.0.1 refused.
# Screenshots: build/site-artifacts/.
test-site: site browser-tools
	$(PY) -m pytest -p no:cacheprovider -p no:randomly -o addopts="-ra" tests_site -v
