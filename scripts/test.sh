#!/usr/bin/env bash
# Run gb10.serving's tests: `scripts/test.sh` runs every stage, `scripts/test.sh STAGE...`
# only those. Stages: setup lint sanity units pytest integration molecule (`fast` stands
# for lint sanity units pytest: everything that needs no lab).
# Every test stage runs even when an earlier one failed (a failed setup stops the run); the
# exit status is non-zero if any did. In a full run the stages that need no lab run beside
# integration and Molecule (GB10_TEST_SERIAL=1: one after another). At the end: each
# stage's wall time, the whole run's, and the ten slowest tests (from the JUnit files the
# stages write under build/test-results).
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
export PATH="$root/.venv/bin:$PATH"
export ANSIBLE_CONFIG="$root/ansible.cfg"
export ANSIBLE_FORCE_COLOR=0 ANSIBLE_NOCOLOR=1 PY_COLORS=0 NO_COLOR=1

results=$root/build/test-results

stage_setup() { scripts/setup.sh; }

stage_lint() {
  local py_dirs=() dir
  for dir in plugins lab tests molecule benchmarks scripts; do
    [ -d "$dir" ] && py_dirs+=("$dir")
  done
  ruff check "${py_dirs[@]}" \
    && ruff format --check "${py_dirs[@]}" \
    && yamllint --strict . \
    && ansible-lint --offline --strict -q \
    && scripts/lint-docs.sh
}

stage_sanity() { scripts/ansible-test.sh sanity; }

stage_units() {
  local status=0 junit
  scripts/ansible-test.sh units || status=$?
  # ansible-test writes one JUnit file per Python version into the collection's copy.
  for junit in build/ansible_collections/*/*/tests/output/junit/python*-units.xml; do
    [ -f "$junit" ] && cp "$junit" "$results/units.xml"
  done
  return $status
}

# Tests of the lab's own tooling and other plain pytest tests that need no lab.
stage_pytest() { pytest -q --junitxml="$results/pytest.xml" tests/lab tests/packaging tests/sparkrun tests/controller tests/roles; }

# Playbooks driven through ansible-runner against a fresh lab, with the lab inventory. The
# lab is left up: the molecule stage after this one deploys the production-shaped inventory
# on it (check, converge, idempotence, verify) and purges it at the end.
stage_integration() {
  python3 lab/labctl.py down --purge && python3 lab/labctl.py up || return 1
  count_boots integration pytest -q --durations=10 --junitxml="$results/integration.xml" \
    tests/integration
}

# Reset first: the state of a run that was killed says the instances exist, and Molecule
# would then skip create (the lab nodes and the throttled hub that converge downloads from).
stage_molecule() { molecule reset && count_boots molecule molecule test --all; }

# Run a command while counting the lab's engine boots, the suite's most expensive step:
# each start of the head's engine container is one boot of the cluster's engines. The
# count goes to $results/boots-STAGE.txt, one line per start.
count_boots() {
  local stage=$1 watcher status=0
  shift
  docker events --filter type=container --filter event=start \
    --filter container=gb10-lab-node0-vllm --format '{{.Actor.Attributes.name}}' \
    >"$results/boots-$stage.txt" 2>/dev/null &
  watcher=$!
  "$@" || status=$?
  # The daemon delivers an event a moment after it happens.
  sleep 1
  kill "$watcher" 2>/dev/null
  wait "$watcher" 2>/dev/null
  return $status
}

all_stages=(setup lint sanity units pytest integration molecule)
# What needs no lab; in a full run these go on beside the lab stages (see below).
fast_stages=(lint sanity units pytest)
stages=()
for stage in "${@:-${all_stages[@]}}"; do
  if [ "$stage" = fast ]; then stages+=("${fast_stages[@]}"); else stages+=("$stage"); fi
done
for stage in "${stages[@]}"; do
  if ! declare -F "stage_$stage" >/dev/null; then
    echo "unknown stage '$stage'; stages: ${all_stages[*]} fast" >&2
    exit 2
  fi
done

rm -rf "$results"
mkdir -p "$results"
verdicts=$results/stages.txt
: >"$verdicts"

# Run one stage, timed; its verdict and wall time go to $verdicts.
run_stage() {
  local stage=$1 start seconds verdict=ok
  start=$(date +%s)
  printf '\n==== %s ====\n' "$stage"
  "stage_$stage" || verdict=FAILED
  seconds=$(($(date +%s) - start))
  printf '==== %s: %s (%ss)\n' "$stage" "$verdict" "$seconds"
  printf '%s %s %s\n' "$stage" "$verdict" "$seconds" >>"$verdicts"
  [ "$verdict" = ok ]
}

# Put this shell, and everything it starts, in a CPU control group of the lowest weight:
# it runs on what the lab's engines and Ansible leave idle. Niceness alone does not do it:
# the scheduler weighs control groups (and, outside them, session autogroups) against each
# other before it looks at nice, and Docker puts every container in a group of its own.
# On two cores, a container's CPU-bound work beside two busy loops at nice 19 got 48% of
# what it got alone, beside the same loops in this group 96%; the lab's first converge took
# 371 s beside the niced fast stages, 177 s alone. Where the control groups cannot be
# written (cgroup v2 without the cpu controller delegated, no root), nice is what is left.
background_group=gb10-serving-test-background
yield_cpu() {
  local v1=/sys/fs/cgroup/cpu v2=/sys/fs/cgroup
  renice -n 19 -p "$BASHPID" >/dev/null
  if [ -f "$v1/cpu.shares" ]; then
    mkdir -p "$v1/$background_group" && echo 2 >"$v1/$background_group/cpu.shares" \
      && echo "$BASHPID" >"$v1/$background_group/cgroup.procs"
  elif grep -qw cpu "$v2/cgroup.subtree_control" 2>/dev/null; then
    mkdir -p "$v2/$background_group" && echo 1 >"$v2/$background_group/cpu.weight" \
      && echo "$BASHPID" >"$v2/$background_group/cgroup.procs"
  else
    false
  fi 2>/dev/null || echo "test.sh: no CPU control group for the background stages; they run at nice 19"
}
release_cpu_group() {
  rmdir "/sys/fs/cgroup/cpu/$background_group" "/sys/fs/cgroup/$background_group" 2>/dev/null
  return 0
}

run_start=$(date +%s)
if [ $# -eq 0 ] && [ -z "${GB10_TEST_SERIAL:-}" ]; then
  # A full run: after setup, the stages that need no lab run one after another in the
  # background while integration and Molecule hold the lab; most of the lab stages' time is
  # waiting on engines and on Ansible's round trips, so the two lines share the machine
  # well. The background stages' output is printed when the lab stages are done. They get
  # the least CPU while the lab wants it (see yield_cpu). GB10_TEST_SERIAL=1 runs every
  # stage in turn instead.
  if run_stage setup; then
    (
      yield_cpu
      for stage in "${fast_stages[@]}"; do run_stage "$stage"; done
    ) >"$results/fast.log" 2>&1 &
    fast_pid=$!
    run_stage integration
    run_stage molecule
    wait "$fast_pid"
    release_cpu_group
    printf '\n==== output of the stages that ran beside the lab (%s)\n' "${fast_stages[*]}"
    cat "$results/fast.log"
  fi
else
  for stage in "${stages[@]}"; do
    run_stage "$stage" || { [ "$stage" = setup ] && break; }
  done
fi
total=$(($(date +%s) - run_start))

printf '\n==== wall time per stage\n'
while read -r stage verdict seconds; do
  printf '%-12s %-7s %5d s  (%d min %02d s)\n' "$stage" "$verdict" "$seconds" \
    $((seconds / 60)) $((seconds % 60))
done <"$verdicts"
printf '%-12s %-7s %5d s  (%d min %02d s)\n' "make test" "" "$total" $((total / 60)) $((total % 60))
for boots in "$results"/boots-*.txt; do
  [ -f "$boots" ] || continue
  stage=${boots##*/boots-}
  printf 'engine boots in %s: %d\n' "${stage%.txt}" "$(wc -l <"$boots")"
done
printf '\n==== the ten slowest tests\n'
python3 scripts/slowest_tests.py --count 10 "$results"/*.xml
passed=$(awk '$2 == "ok" {printf "%s ", $1}' "$verdicts")
failed=$(awk '$2 != "ok" {printf "%s ", $1}' "$verdicts")
printf '\npassed stages: %s\nfailed stages: %s\n' "${passed:-none}" "${failed:-none}"
printf 'stages: %d passed, %d failed\n' "$(wc -w <<<"$passed")" "$(wc -w <<<"$failed")"
[ -z "$failed" ]
