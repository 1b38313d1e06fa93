#!/usr/bin/env bash
# Install everything gb10.serving's development, tests and lab need, idempotently.
#
#   scripts/setup.sh            system packages, Docker engine, venv, collections, lab images
#   scripts/setup.sh --no-images   the same without building the lab images
#
# Slow parts are cached outside the work tree under $GB10_CACHE_DIR (default
# ~/.cache/gb10-serving), keyed by a hash of the inputs that made them, so a fresh
# clone on a machine that ran this before is ready in seconds.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

cache_dir=${GB10_CACHE_DIR:-$HOME/.cache/gb10-serving}
python=${GB10_PYTHON:-python3.11}
# The collections gb10.serving depends on come out of this PyPI wheel (no Galaxy server
# is reachable from the development machines); it pairs with ansible-core 2.19.
ansible_wheel=ansible==12.3.0
collections=(community.docker community.general ansible.posix community.library_inventory_filtering_v1)
apt_packages=(docker.io mmdebstrap iproute2 shellcheck openssh-client)
# The peer the sparkrun import/export is tested against (tests/sparkrun); it needs Python
# 3.12, so it gets its own venv, .venv-sparkrun.
sparkrun_package=sparkrun==0.4.2
# The ecosystem's documentation linter (antsibull-docs lint-collection-docs, run by the lint
# stage through scripts/lint-docs.sh): it pulls Sphinx and much else, so it gets its own
# venv, .venv-docs, beside the ansible-core the collection is tested with.
docs_packages=(antsibull-docs==2.28.0 ansible-core==2.19.14)

log() { printf '== setup: %s\n' "$*" >&2; }

hash_of() { cat "$@" | sha256sum | cut -c1-12; }

install_system_packages() {
  local missing=() pkg
  for pkg in "${apt_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'ok installed' || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing Debian packages: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

start_docker() {
  docker info >/dev/null 2>&1 && return 0
  log "starting the Docker engine"
  if [ -d /run/systemd/system ] && systemctl start docker 2>/dev/null; then
    :
  else
    mkdir -p "$cache_dir"
    nohup dockerd >"$cache_dir/dockerd.log" 2>&1 &
  fi

  for _ in $(seq 1 60); do
    docker info >/dev/null 2>&1 && return 0
    sleep 1
  done
  log "the Docker engine did not start; see $cache_dir/dockerd.log"
  exit 1
}

# Make the venv $2 with the interpreter $1 and pip-install the remaining arguments into it,
# unless an earlier run finished it (its .complete marker); link it as $3.
cached_venv() {
  local interpreter=$1 venv=$2 link=$3
  shift 3
  if [ ! -f "$venv/.complete" ]; then
    log "installing $* with $("$interpreter" -V) in $venv"
    rm -rf "$venv"
    mkdir -p "$cache_dir"
    "$interpreter" -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check "$@"
    touch "$venv/.complete"
  fi
  ln -sfn "$venv" "$link"
}

setup_venv() {
  local key
  key=$( ("$python" -VV; cat requirements-dev.txt constraints-dev.txt) | sha256sum | cut -c1-12)
  cached_venv "$python" "$cache_dir/venv-$key" .venv -r requirements-dev.txt -c constraints-dev.txt
}

# A Python 3.12 interpreter: GB10_PYTHON312, python3.12 on PATH (when it runs: a pyenv shim
# may not), else the newest 3.12.x that pyenv has installed.
find_python312() {
  local candidate version
  for candidate in "${GB10_PYTHON312:-}" python3.12; do
    [ -n "$candidate" ] || continue
    if "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' 2>/dev/null; then
      command -v "$candidate"
      return 0
    fi
  done
  if command -v pyenv >/dev/null 2>&1; then
    version=$(pyenv versions --bare 2>/dev/null | grep -E '^3\.12\.[0-9]+$' | sort -V | tail -n 1)
    if [ -n "$version" ]; then
      candidate="$(pyenv prefix "$version")/bin/python3.12"
      if [ -x "$candidate" ]; then
        echo "$candidate"
        return 0
      fi
    fi
  fi
  return 1
}

setup_sparkrun_venv() {
  local python312 key venv
  if ! python312=$(find_python312); then
    log "no Python 3.12 found (${sparkrun_package} needs it for tests/sparkrun): install python3.12," \
      "or a 3.12.x with pyenv, or point GB10_PYTHON312 at one, and run this again"
    exit 1
  fi
  key=$( ("$python312" -VV; echo "$sparkrun_package") | sha256sum | cut -c1-12)
  venv="$cache_dir/venv-${sparkrun_package/==/-}-py$("$python312" -c 'import platform; print(platform.python_version())')-$key"
  cached_venv "$python312" "$venv" .venv-sparkrun "$sparkrun_package"
}

setup_docs_venv() {
  local key
  key=$( ("$python" -VV; echo "${docs_packages[*]}") | sha256sum | cut -c1-12)
  cached_venv "$python" "$cache_dir/venv-docs-$key" .venv-docs "${docs_packages[@]}"
}

setup_collections() {
  local key dir wheel_dir name
  key=$(printf '%s %s' "$ansible_wheel" "${collections[*]}" | sha256sum | cut -c1-12)
  dir="$cache_dir/collections-$key"
  if [ ! -f "$dir/.complete" ]; then
    log "extracting ${collections[*]} from $ansible_wheel"
    rm -rf "$dir"
    wheel_dir=$(mktemp -d)
    .venv/bin/pip download -q --no-deps --disable-pip-version-check -d "$wheel_dir" "$ansible_wheel"
    mkdir -p "$dir"
    .venv/bin/python - "$wheel_dir"/ansible-*.whl "$dir" "${collections[@]}" <<'PY'
import sys, zipfile
wheel, dest, names = sys.argv[1], sys.argv[2], sys.argv[3:]
prefixes = tuple("ansible_collections/%s/" % n.replace(".", "/") for n in names)
with zipfile.ZipFile(wheel) as zf:
    zf.extractall(dest, [m for m in zf.namelist() if m.startswith(prefixes)])
PY
    rm -rf "$wheel_dir"
    touch "$dir/.complete"
  fi
  # .cache/collections is what ansible.cfg puts first on collections_path: the
  # dependencies, and this checkout itself as gb10.serving.
  rm -rf .cache/collections
  mkdir -p .cache/collections/ansible_collections/gb10
  for name in "${collections[@]}"; do
    mkdir -p ".cache/collections/ansible_collections/${name%%.*}"
    ln -sfn "$dir/ansible_collections/${name/.//}" ".cache/collections/ansible_collections/${name/.//}"
  done
  ln -sfn ../../../.. .cache/collections/ansible_collections/gb10/serving
}

# The lab engine image is the slowest part from nothing (about 5 minutes: wheels, mmdebstrap,
# import); it builds in the background while the tool chains install, its output kept
# apart and printed when it ends. It needs only the machine's python3 and Docker.
engine_image_pid="" engine_image_log=""

start_engine_image() {
  engine_image_log=$(mktemp)
  python3 lab/labctl.py image --only engine >"$engine_image_log" 2>&1 &
  engine_image_pid=$!
  # A failure elsewhere in this script stops the build too.
  trap 'kill "$engine_image_pid" 2>/dev/null || true' EXIT
}

finish_engine_image() {
  local status=0
  wait "$engine_image_pid" || status=$?
  trap - EXIT
  cat "$engine_image_log" >&2
  rm -f "$engine_image_log"
  [ "$status" -eq 0 ] || { log "building the lab engine image failed (see above)"; exit 1; }
}

main() {
  install_system_packages
  start_docker
  [ "${1:-}" = "--no-images" ] || start_engine_image
  setup_venv
  setup_sparkrun_venv
  setup_docs_venv
  setup_collections
  if [ -n "$engine_image_pid" ]; then
    .venv/bin/python lab/labctl.py image --only node
    finish_engine_image
  fi
  log "ready"
}

main "$@"
