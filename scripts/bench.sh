#!/usr/bin/env bash
# Run every benchmark under benchmarks/ (executables named *.sh or *.py), each writing its
# figures to reports/bench/. Benchmarks measure; tests never time anything.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export PATH="$root/.venv/bin:$PATH" ANSIBLE_CONFIG="$root/ansible.cfg"
mkdir -p reports/bench
shopt -s nullglob
benches=(benchmarks/*.sh benchmarks/*.py)
if [ ${#benches[@]} -eq 0 ]; then
  echo "no benchmarks yet (benchmarks/ is empty)"
  exit 0
fi
for bench in "${benches[@]}"; do
  echo "==== $bench"
  "./$bench"
done
