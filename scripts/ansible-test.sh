#!/usr/bin/env bash
# Run ansible-test against the gb10.serving collection, offline-safe.
#
#   scripts/ansible-test.sh sanity [ANSIBLE-TEST-ARGS...]
#   scripts/ansible-test.sh units  [ANSIBLE-TEST-ARGS...]
#
# Extra arguments go to ansible-test as they are (for example `-v`, `--test pep8`,
# or targets). Exits non-zero when ansible-test reports any failure.
#
# What it does, in order:
#  1. Copies the repository's files (git ls-files --cached --others --exclude-standard:
#     tracked plus untracked-but-not-ignored, so never .venv, .cache or build) into
#     build/ansible_collections/gb10/serving, replacing the previous copy, because
#     ansible-test only works on a tree at .../ansible_collections/<namespace>/<name>.
#     ansible-test's own tests/output/.tmp/delegation (the --venv controller venv)
#     survives, so warm runs reuse it; earlier results are removed.
#  2. Links the dependency collections of .cache/collections (made by scripts/setup.sh)
#     next to gb10 under build/ansible_collections: ansible-test points
#     ANSIBLE_COLLECTIONS_PATH at build/, so that is where they have to be.
#  3. Makes sure ansible-test never downloads get-pip.py (its bootstrap of pip into the
#     venvs it creates; the host it comes from is not reachable here): when
#     ~/.ansible/test/cache/get_pip_<ver>.py is missing, writes our own stand-in there,
#     which installs the requested pip with the pip wheel bundled with CPython's ensurepip.
#  4. Runs ansible-test with --venv --python 3.11: ansible-test makes its own venvs and
#     pip-installs its pinned requirements from the package index (PyPI, as configured);
#     they are cached under ~/.ansible/test/venv, so only the first run is slow.
#
# ANSIBLE_TEST_CONTENT_ROOT is set to the copy: otherwise ansible-test would find
# the repository's .git above build/ and ask git for the copy's files, and git
# ignores build/.
#
# Environment:
#   GB10_ANSIBLE_TEST_PYTHON   Python version for ansible-test (default 3.11)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

# The collection's name as galaxy.yml gives it (gb10.serving).
read -r namespace name < <(.venv/bin/python -c '
import yaml
with open("galaxy.yml") as f:
    g = yaml.safe_load(f)
print(g["namespace"], g["name"])
' 2>/dev/null || echo gb10 serving)
python_version=${GB10_ANSIBLE_TEST_PYTHON:-3.11}

build_root=$root/build
collections_root=$build_root/ansible_collections
collection=$collections_root/$namespace/$name
dependencies=$root/.cache/collections/ansible_collections

log() { printf '== ansible-test.sh: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

usage() {
  sed -n '2,8p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

# 1. A copy of the collection at build/ansible_collections/gb10/serving.
copy_collection() {
  local list=$tmp_dir/files filtered=$tmp_dir/files.existing file
  git -C "$root" ls-files --cached --others --exclude-standard -z >"$list"
  # Files deleted from the work tree but still in the index are listed too: skip them.
  # Never copy the copy, the tool chain or the caches, even if .gitignore stops saying so.
  while IFS= read -r -d '' file; do
    case $file in
      build/* | .cache/* | .venv | .venv/*) continue ;;
    esac
    if [[ -e $file || -L $file ]]; then
      printf '%s\0' "$file"
    fi
  done <"$list" >"$filtered"

  mkdir -p "$collection"
  # Remove the previous copy, except ansible-test's --venv controller venv.
  find "$collection" -mindepth 1 -maxdepth 1 ! -name tests -exec rm -rf -- {} +
  if [[ -d $collection/tests ]]; then
    find "$collection/tests" -mindepth 1 -maxdepth 1 ! -name output -exec rm -rf -- {} +
  fi
  if [[ -d $collection/tests/output ]]; then
    find "$collection/tests/output" -mindepth 1 -maxdepth 1 ! -name .tmp -exec rm -rf -- {} +
  fi
  if [[ -d $collection/tests/output/.tmp ]]; then
    find "$collection/tests/output/.tmp" -mindepth 1 -maxdepth 1 ! -name delegation -exec rm -rf -- {} +
  fi

  tar -C "$root" --null --no-recursion -T "$filtered" -cf - | tar -C "$collection" -xf -
  log "copied $(tr -cd '\0' <"$filtered" | wc -c) files to ${collection#"$root"/}"
}

# 2. The collections gb10.serving depends on, beside it.
link_dependencies() {
  local ns coll name_
  [[ -d $dependencies ]] || die "no dependency collections in ${dependencies#"$root"/}: run scripts/setup.sh"
  # Drop links left from earlier runs.
  find "$collections_root" -mindepth 1 -maxdepth 2 -type l -exec rm -f -- {} +
  for ns in "$dependencies"/*/; do
    ns=$(basename "$ns")
    if [[ $ns != "$namespace" ]]; then
      ln -sfn "$dependencies/$ns" "$collections_root/$ns"
      continue
    fi
    # Same namespace as ours: link its other collections one by one.
    for coll in "$dependencies/$ns"/*/; do
      name_=$(basename "$coll")
      [[ $name_ == "$name" ]] || ln -sfn "$dependencies/$ns/$name_" "$collections_root/$ns/$name_"
    done
  done
}

# 3. The offline stand-in for get-pip.py.
install_get_pip_standin() {
  local pip_version path tmp=$tmp_dir/get-pip.py
  pip_version=$(python - "$python_version" <<'EOF'
import sys
from ansible_test._internal.host_configs import NativePythonConfig
from ansible_test._internal.python_requirements import get_venv_packages
print(get_venv_packages(NativePythonConfig(version=sys.argv[1], path=sys.executable))['pip'])
EOF
)
  # The same path ansible-test's requirements.py looks in before it downloads.
  path=$HOME/.ansible/test/cache/get_pip_${pip_version//./_}.py
  cp "$root/scripts/get_pip_standin.py" "$tmp"
  if [[ ! -e $path ]] || { grep -q 'gb10-serving-get-pip-stand-in' "$path" && ! cmp -s "$tmp" "$path"; }; then
    mkdir -p "$(dirname "$path")"
    cp "$tmp" "$path.tmp"
    mv -f "$path.tmp" "$path"
    log "wrote offline get-pip stand-in (pip $pip_version): $path"
  fi
}


run_sanity() {
  # ansible-test silently skips its shellcheck test without the binary; setup.sh installs it.
  command -v shellcheck >/dev/null || die "no shellcheck: run scripts/setup.sh"
  ansible-test sanity --venv --python "$python_version" --color no "$@"
}

run_units() {
  local tests arg targets=(tests/unit/plugins/)
  # ansible-test units takes every tests/unit/**/test_*.py as a target, so tests of
  # things that are not collection content (the lab's, say) put under tests/unit would
  # run here too, inside ansible-test's venv; only tests/unit/plugins holds the
  # collection's unit tests, so only that is given, unless targets (tests/...) are
  # on the command line.
  for arg in "$@"; do
    if [[ $arg == tests/* ]]; then
      targets=()
    fi
  done
  tests=$(find tests/unit/plugins -type f -name 'test_*.py' 2>/dev/null | wc -l)
  if [[ $tests -eq 0 && ${#targets[@]} -gt 0 ]]; then
    # ansible-test itself would only warn "All targets skipped." and exit 0.
    log "no unit tests in tests/unit/plugins (no test_*.py files) yet: nothing to run, not a failure"
    return 0
  fi
  ansible-test units --venv --python "$python_version" --color no "$@" "${targets[@]}"
}

main() {
  local command=${1:-}
  case $command in
    sanity | units) shift ;;
    -h | --help) usage; return 0 ;;
    *) usage >&2; return 2 ;;
  esac

  [[ -x $root/.venv/bin/ansible-test ]] || die "no .venv/bin/ansible-test: run scripts/setup.sh"
  export PATH="$root/.venv/bin:$PATH"
  export VIRTUAL_ENV=$root/.venv
  # The repository's own settings must not leak into ansible-test's runs.
  unset ANSIBLE_CONFIG ANSIBLE_COLLECTIONS_PATH ANSIBLE_COLLECTIONS_PATHS

  tmp_dir=$(mktemp -d)
  trap 'rm -rf "$tmp_dir"' EXIT

  # One run at a time: runs share the copy and ansible-test's venv inside it.
  mkdir -p "$build_root"
  exec 9>"$build_root/.ansible-test.lock"
  if ! flock -n 9; then
    log "waiting for another scripts/ansible-test.sh run to finish"
    flock 9
  fi

  copy_collection
  link_dependencies
  install_get_pip_standin

  cd "$collection"
  export ANSIBLE_TEST_CONTENT_ROOT=$collection
  "run_$command" "$@"
}

main "$@"
