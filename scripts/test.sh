#!/usr/bin/env bash
# Run gb10.serving's tests: `scripts/test.sh` runs every stage, `scripts/test.sh STAGE...`
# only those. Stages: lint sanity units pytest integration molecule.
# Every stage runs even when an earlier one failed; the exit status is non-zero if any did.
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
export PATH="$root/.venv/bin:$PATH"
export ANSIBLE_CONFIG="$root/ansible.cfg"
export ANSIBLE_FORCE_COLOR=0 ANSIBLE_NOCOLOR=1 PY_COLORS=0 NO_COLOR=1

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

stage_units() { scripts/ansible-test.sh units; }

# Tests of the lab's own tooling and other plain pytest tests that need no lab.
stage_pytest() { pytest -q tests/lab tests/packaging tests/sparkrun; }

# Playbooks driven through ansible-runner against a fresh lab. The lab is left up and
# converged: the molecule stage after this one runs on it and purges it at the end.
stage_integration() {
  python3 lab/labctl.py down --purge && python3 lab/labctl.py up || return 1
  pytest -q --durations=15 tests/integration
}

stage_molecule() { molecule test --all; }

all_stages=(lint sanity units pytest integration molecule)
stages=("$@")
[ ${#stages[@]} -gt 0 ] || stages=("${all_stages[@]}")

passed=() failed=()
for stage in "${stages[@]}"; do
  if ! declare -F "stage_$stage" >/dev/null; then
    echo "unknown stage '$stage'; stages: ${all_stages[*]}" >&2
    exit 2
  fi
  start=$(date +%s)
  printf '\n==== %s ====\n' "$stage"
  if "stage_$stage"; then
    passed+=("$stage")
    printf '==== %s: ok (%ss)\n' "$stage" $(($(date +%s) - start))
  else
    failed+=("$stage")
    printf '==== %s: FAILED (%ss)\n' "$stage" $(($(date +%s) - start))
  fi
done

printf '\npassed stages: %s\nfailed stages: %s\n' "${passed[*]:-none}" "${failed[*]:-none}"
printf 'stages: %d passed, %d failed\n' ${#passed[@]} ${#failed[@]}
[ ${#failed[@]} -eq 0 ]
