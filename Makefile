# binpick_sim: `make demo` and `make test` set everything up on a fresh machine.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
SEED   ?= 0
OUT    ?= build/demo

# The ROS 2 wheels load their C libraries only if LD_LIBRARY_PATH names them before Python starts.
# Computed by the shell when a recipe runs (make's own file functions would see the venv as it was
# before this run created it); with it set, the wheels' bootstrapper does not re-exec every process.
ROS_ENV = LD_LIBRARY_PATH="$$(printf '%s:' $(CURDIR)/$(VENV)/lib/python3*/site-packages/ros_*.libs)$(CURDIR)/$(VENV)/lib$${LD_LIBRARY_PATH:+:$$LD_LIBRARY_PATH}" \
	_ROS_WHEELS_BOOTSTRAP_COMPLETE=1
# DDS stays on this machine unless the caller says otherwise.
export ROS_AUTOMATIC_DISCOVERY_RANGE ?= LOCALHOST
export PYTHONUNBUFFERED = 1

.PHONY: help venv demo demo-two-arms test test-skipped test-scale test-colcon docs run bench bench-her planner-example lock clean

help:
	@echo "make demo   - set up .venv if needed, run the stack headless and move objects into the drop bin (SEED=$(SEED))"
	@echo "make demo-two-arms - the same with two arms (config/scene_two_arms.yaml): one picks, the other moves"
	@echo "make test   - set up .venv if needed and run the test suite"
	@echo "make test-scale - the at-scale tests (100 episodes on 1 and 2 Ray workers, a two-node cluster losing a node)"
	@echo "make test-colcon - the ROS user's path: colcon build + colcon test of the tests that start the installed executables"
	@echo "make docs   - the manual (doc/*.md) as HTML in build/docs/index.html; fails on any Sphinx warning"
	@echo "make run    - serve the simulation until Ctrl-C (ROS_DOMAIN_ID as in your shell)"
	@echo "make bench  - benchmarks (installs requirements-bench.txt): table on stdout, JSON in build/bench.json"
	@echo "make bench-her - SAC + HER on FrankaReach-v0 beside PandaReach-v3 (~10 min), then FrankaLift-v0 (one cube) and FrankaPickPlace-v0 (~2 h on CPU); HER_ARGS=\"--envs ...\" picks; curves in build/her"
	@echo "make planner-example - OMPL plans against what sim publishes and picks an object (installs requirements-planning.txt)"

venv: $(STAMP)

# Rebuilt when the pins or the package metadata change.
$(STAMP): requirements.txt setup.py package.xml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade "pip>=24"
	$(PY) -m pip install --quiet --requirement requirements.txt
	$(PY) -m pip install --quiet --no-deps --editable .
	@touch $@

# The package's bytecode, written where Python itself would not (PYTHONDONTWRITEBYTECODE, as these machines
# set it): without it every process compiled ~90 modules from source at its start (`sim` to its first /clock:
# 0.51 s, 0.44 s with it). A source changed since is compiled again on import, as always; __pycache__ is ignored.
BYTECODE = $(PY) -m compileall -q binpick_sim bench

demo: $(STAMP)
	@$(BYTECODE)
	$(ROS_ENV) $(PY) -m binpick_sim.demo --seed $(SEED) --out $(OUT)

demo-two-arms: $(STAMP)
	$(ROS_ENV) $(PY) -m binpick_sim.demo --config config/scene_two_arms.yaml --seed $(SEED) --out $(OUT)

# The optional video writer (RecordVideo's MoviePy), installed for the tests that record videos.
VIDEO_STAMP := $(VENV)/.video-installed
$(VIDEO_STAMP): $(STAMP) requirements-video.txt
	$(PY) -m pip install --quiet --requirement requirements-video.txt
	@touch $@

# The dataset exporters' formats (Minari), installed for test/rollouts/test_datasets.py.
DATASETS_STAMP := $(VENV)/.datasets-installed
$(DATASETS_STAMP): $(STAMP) requirements-datasets.txt
	$(PY) -m pip install --quiet --requirement requirements-datasets.txt
	@touch $@

# Two workers (pytest-xdist), each test file whole on one of them (its module fixtures shared), then the
# tests bounded in wall time (marker `serial`) alone. Most tests wait on processes and DDS, so two cores run
# the suite in about two thirds of the time. `make test PYTEST_WORKERS=0` runs the first part in one process.
# A worker that crashes (a segfault) ends the run at once, naming the test it ran: pytest-xdist 3.8.0 replaces
# a crashed worker under --dist loadfile and then can hang (pytest-xdist#784, #1323; seen here once).
# `make test SKIP_COLCON_TESTS=1` leaves out COLCON_TESTS (below): CI (.ci/run) runs them right after, in the
# ROS user's workspace (make test-colcon), and once is enough.
# `make test RECORD_SKIPS=FILE` writes the ids of the tests it skipped into FILE, and `make test-skipped SKIPPED=FILE`
# runs just those again (test/skip_record.py): CI runs `make test` on a venv without the ROS tools, as a plain
# machine has it, then installs them and runs what skipped for their absence.
PYTEST_WORKERS ?= 2
SKIP_COLCON_TESTS ?=
RECORD_SKIPS ?=
PYTEST_SKIPPED = $(if $(SKIP_COLCON_TESTS),$(addprefix --deselect ,$(COLCON_TESTS)))
PYTEST_PARALLEL = -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder --max-worker-restart=0 -m "not serial"
test: $(STAMP) $(VIDEO_STAMP) $(DATASETS_STAMP)
	@$(BYTECODE)
	$(if $(RECORD_SKIPS),rm -f $(RECORD_SKIPS) && mkdir -p $(dir $(RECORD_SKIPS)) && touch $(RECORD_SKIPS))
	$(if $(RECORD_SKIPS),BINPICK_RECORD_SKIPS=$(abspath $(RECORD_SKIPS))) $(ROS_ENV) $(PY) -m pytest test $(PYTEST_PARALLEL) $(PYTEST_SKIPPED)
	$(if $(RECORD_SKIPS),BINPICK_RECORD_SKIPS=$(abspath $(RECORD_SKIPS))) $(ROS_ENV) $(PY) -m pytest test -m serial $(PYTEST_SKIPPED)

# pytest reads the ids from the file (`@FILE`; an empty one would mean the whole suite); its exit 5, no test
# of that part in the list, is no failure.
SKIPPED ?= build/skipped-tests.txt
test-skipped: $(STAMP) $(VIDEO_STAMP) $(DATASETS_STAMP)
	if ! test -s $(SKIPPED); then echo "$(SKIPPED): no test was skipped"; exit 0; fi; \
	$(ROS_ENV) $(PY) -m pytest @$(SKIPPED) $(PYTEST_PARALLEL) $(PYTEST_SKIPPED); code=$$?; \
	test $$code -eq 0 -o $$code -eq 5 || exit $$code; \
	$(ROS_ENV) $(PY) -m pytest @$(SKIPPED) -m serial $(PYTEST_SKIPPED); code=$$?; test $$code -eq 0 -o $$code -eq 5

# The at-scale forms of properties make test checks smaller (marker `scale`: 100 episodes on 1 and 2 Ray
# workers, a two-node Ray cluster losing a node): about 3 minutes more, before a release.
test-scale: $(STAMP) $(DATASETS_STAMP)
	$(ROS_ENV) $(PY) -m pytest test -m scale

# The ROS user's path, as CI runs it (README "Testing on a ROS install"): a venv of the dependencies only
# (requirements.txt + ROS_TOOLS, no `pip install -e .`), `colcon build` of this checkout in a workspace of
# its own, that workspace sourced, then `colcon test` of COLCON_TESTS: the tests that start the installed
# executables (`ros2 run/launch binpick_sim ...`, launch_test, colcon itself), where a process's
# environment decides whether the package is found; the rest behave as under `make test`. `colcon test`
# says 0 when tests fail (not when pytest cannot collect them), so the verdict takes both exit codes,
# colcon test's and `colcon test-result`'s, and at least one test that did not skip.
COLCON_VENV  := build/colcon-venv
COLCON_WS    := build/colcon-ws
ROS_TOOLS    ?= ../shared/ros-tools
COLCON_TESTS ?= test/launch/test_packaging.py test/launch/test_launch_sim.py test/launch/test_launch_two_arms.py test/docs/test_readme_ros_path.py \
	test/launch/test_executables.py::test_sim_stops_when_its_launch_is_killed

COLCON_STAMPS := $(COLCON_VENV)/.installed $(if $(wildcard $(ROS_TOOLS)),$(COLCON_VENV)/.ros-tools-installed)

$(COLCON_VENV)/.installed: requirements.txt
	@test -x $(COLCON_VENV)/bin/python || $(PYTHON) -m venv $(COLCON_VENV)
	$(COLCON_VENV)/bin/pip install --quiet --upgrade "pip>=24"
	$(COLCON_VENV)/bin/pip install --quiet --requirement requirements.txt
	@touch $@

$(COLCON_VENV)/.ros-tools-installed: $(COLCON_VENV)/.installed
	$(COLCON_VENV)/bin/pip install --quiet --requirement "$(ROS_TOOLS)/requirements-registry.txt"
	$(COLCON_VENV)/bin/pip install --quiet --no-index "$(ROS_TOOLS)"/*.whl
	@touch $@

test-colcon: $(COLCON_STAMPS)
	rm -rf $(COLCON_WS) && mkdir -p $(COLCON_WS)/src && ln -s $(CURDIR) $(COLCON_WS)/src/binpick_sim
	cd $(COLCON_WS) && source $(CURDIR)/$(COLCON_VENV)/bin/activate && \
	  export LD_LIBRARY_PATH="$$(printf '%s:' $$VIRTUAL_ENV/lib/python3*/site-packages/ros_*.libs)$$VIRTUAL_ENV/lib$${LD_LIBRARY_PATH:+:$$LD_LIBRARY_PATH}" \
	    _ROS_WHEELS_BOOTSTRAP_COMPLETE=1 && \
	  colcon build --event-handlers console_direct- && source install/setup.bash && \
	  { colcon test --packages-select binpick_sim --event-handlers console_direct+ --pytest-args $(COLCON_TESTS); \
	    ran=$$?; colcon test-result --verbose > test-result.txt; verdict=$$?; cat test-result.txt; \
	    test $$ran -eq 0 && test $$verdict -eq 0; } && \
	  $(PYTHON) -c 'import re, sys; n, s = map(int, re.search(r"^Summary: (\d+) tests?,.*?(\d+) skipped", open("test-result.txt").read(), re.M).groups()); sys.exit(0 if n > s else "colcon test: no test ran (%d of %d skipped)" % (s, n))'

# The manual: doc/*.md built by Sphinx + myst-parser (doc/conf.py, the layout rosdoc2 looks for) into
# build/docs. Warnings are errors (-W, all reported: --keep-going), references are checked (-n), and the
# environment is rebuilt every time (-E) so a warning of an unchanged page is not hidden by the cache.
# Sphinx has a venv of its own (requirements-docs.txt says why); nothing is fetched while building.
DOCS_VENV := build/docs-venv
$(DOCS_VENV)/.installed: requirements-docs.txt
	@test -x $(DOCS_VENV)/bin/python || $(PYTHON) -m venv $(DOCS_VENV)
	$(DOCS_VENV)/bin/pip install --quiet --upgrade "pip>=24"
	$(DOCS_VENV)/bin/pip install --quiet --requirement requirements-docs.txt
	@touch $@

docs: $(DOCS_VENV)/.installed
	$(DOCS_VENV)/bin/sphinx-build -b html -E -W --keep-going -n -q doc build/docs
	@echo "the manual: build/docs/index.html"

run: $(STAMP)
	@$(BYTECODE)
	$(ROS_ENV) $(PY) -m binpick_sim.nodes.process.entry

# Bench-only extras (panda-gym, the like-for-like peer) go into the same venv, after the runtime pins.
BENCH_STAMP := $(VENV)/.bench-installed
$(BENCH_STAMP): $(STAMP) requirements-bench.txt
	$(PY) -m pip install --quiet --requirement requirements-bench.txt
	@touch $@

# bench.run writes the bytecode itself (write_bytecode), as `python -m bench.run GROUP` needs it too
bench: $(BENCH_STAMP)
	$(ROS_ENV) $(PY) -m bench.run

# HER with an off-policy learner (Stable-Baselines3, torch's CPU build) up the goal envs' ladder, beside
# panda-gym's PandaReach-v3 (requirements-bench.txt): its own extra, not in `make bench` (torch is large, and
# the runs take hours on a CPU). HER_ARGS passes options on, e.g. HER_ARGS="--envs FrankaReach-v0 PandaReach-v3".
HER_STAMP := $(VENV)/.her-installed
# One retry of an index that does not answer (PyTorch's CPU index, where a local wheel folder serves torch): pip's
# five retries of it, for every package, stalled this install for minutes on a machine without that index.
$(HER_STAMP): $(STAMP) requirements-her.txt
	PIP_RETRIES=1 $(PY) -m pip install --quiet --requirement requirements-her.txt
	@touch $@

HER_ARGS ?=
bench-her: $(HER_STAMP) $(BENCH_STAMP)
	$(ROS_ENV) $(PY) -m bench.her $(HER_ARGS)

# The planner example's OMPL goes into the same venv (control_msgs / moveit_msgs: a ROS install or ../shared/ros-tools).
PLANNING_STAMP := $(VENV)/.planning-installed
$(PLANNING_STAMP): $(STAMP) requirements-planning.txt
	$(PY) -m pip install --quiet --requirement requirements-planning.txt
	@touch $@

planner-example: $(PLANNING_STAMP)
	$(ROS_ENV) $(PY) examples/planner_client.py

# Re-resolve requirements.in into a fully pinned requirements.txt (needs the registry). pip's install
# report lists exactly the distributions it would download; `pip freeze` would also list the Python
# packages the ROS wheels carry inside them, which no registry serves.
lock:
	rm -rf build/lock-venv && $(PYTHON) -m venv build/lock-venv
	build/lock-venv/bin/pip install --quiet --upgrade "pip>=24"
	build/lock-venv/bin/pip install --quiet --dry-run --ignore-installed --report build/lock.json \
	  --requirement requirements.in
	(echo "# Generated by 'make lock' from requirements.in; every version pinned."; \
	 build/lock-venv/bin/python -c 'import json; report = json.load(open("build/lock.json")); \
	   print("\n".join(sorted("%s==%s" % (i["metadata"]["name"], i["metadata"]["version"]) for i in report["install"])))') \
	  > requirements.txt
	rm -rf build/lock-venv build/lock.json

clean:
	rm -rf $(VENV) build install log
