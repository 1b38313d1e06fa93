#!/usr/bin/env bash
# Lint the collection's plugin and role documentation with the ecosystem's tool,
# antsibull-docs lint-collection-docs (its own venv, .venv-docs, made by scripts/setup.sh):
# every DOCUMENTATION block and every meta/argument_specs.yml must validate against the
# schemas the Ansible docsite builds with. Exits non-zero on any finding.
#
# The collection is read where ansible.cfg finds it, .cache/collections (gb10.serving
# links back to this repository, its dependencies beside it).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
if [ ! -x .venv-docs/bin/antsibull-docs ]; then
  echo "lint-docs: .venv-docs has no antsibull-docs: run scripts/setup.sh (make setup)" >&2
  exit 1
fi
export ANSIBLE_COLLECTIONS_PATH="$root/.cache/collections"
# antsibull-docs runs ansible-doc and ansible-galaxy: the ones of its own venv.
export PATH="$root/.venv-docs/bin:$PATH"
cd .cache/collections/ansible_collections/gb10/serving
antsibull-docs lint-collection-docs --plugin-docs --skip-rstcheck .
