#!/usr/bin/env bash
# Run gb10.serving's tests: `scripts/test.sh` runs every stage, `scripts/test.sh STAGE...`
# only those. Stages: setup lint sanity units pytest integration molecule (`fast` stands
# for lint sanity units pytest: everything that needs no lab).
# Every test stage runs even when an earlier one failed (a failed setup stops the run); the
# exit status is non-zero if any did. At the end: each stage's wall time and the ten slowest
# tests (from the JUnit files the stages write under build/test-results).
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
    && ansible-lint --offline --strict -q
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
stage_pytest() { pytest -q --junitxml="$results/pytest.xml" tests/lab tests/packaging tests/sparkrun; }

# Playbooks driven through ansible-runner against a fresh lab, with the lab inventory. The
# lab is left up: the molecule stage after this one deploys the production-shaped inventory
# on it (check, converge, idempotence, verify) and purges it at the end.
stage_integration() {
  python3 lab/labctl.py down --purge && python3 lab/labctl.py up || return 1
  pytest -q --durations=10 --junitxml="$results/integration.xml" tests/integration
}

stage_molecule() { molecule test --all; }

all_stages=(setup lint sanity units pytest integration molecule)
stages=()
for stage in "${@:-${all_stages[@]}}"; do
  if [ "$stage" = fast ]; then stages+=(lint sanity units pytest); else stages+=("$stage"); fi
done

rm -rf "$results"
mkdir -p "$results"
passed=() failed=() times=()
for stage in "${stages[@]}"; do
  if ! declare -F "stage_$stage" >/dev/null; then
    echo "unknown stage '$stage'; stages: ${all_stages[*]} fast" >&2
    exit 2
  fi
  start=$(date +%s)
  printf '\n==== %s ====\n' "$stage"
  if "stage_$stage"; then
    passed+=("$stage")
    verdict=ok
  else
    failed+=("$stage")
    verdict=FAILED
  fi
  seconds=$(($(date +%s) - start))
  times+=("$(printf '%-12s %-7s %5d s  (%d min %02d s)' "$stage" "$verdict" "$seconds" \
    $((seconds / 60)) $((seconds % 60)))")
  printf '==== %s: %s (%ss)\n' "$stage" "$verdict" "$seconds"
  if [ "$stage" = setup ] && [ "$verdict" = FAILED ]; then
    break
  fi
done

printf '\n==== wall time per stage\n'
printf '%s\n' "${times[@]}"
printf '\n==== the ten slowest tests\n'
python3 scripts/slowest_tests.py --count 10 "$results"/*.xml
printf '\npassed stages: %s\nfailed stages: %s\n' "${passed[*]:-none}" "${failed[*]:-none}"
printf 'stages: %d passed, %d failed\n' ${#passed[@]} ${#failed[@]}
[ ${#failed[@]} -eq 0 ]
