#!/usr/bin/env bash
# Builds the image localhost/idp:latest with podman from Debian packages alone.
# Usage: deploy/build.sh [rootfs cache directory]   (run as root; needs debootstrap, podman, runc)
# The debootstrap root file system (about 5 minutes to make) is kept in the cache directory and
# reused while it exists; delete it to take Debian's updates.
set -euo pipefail
cd "$(dirname "$0")/.."
cache=${1:-${XDG_CACHE_HOME:-$HOME/.cache}/idp-rootfs}
mirror=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
# runc, not crun: crun refuses hosts with cgroups in hybrid mode (v1 controllers beside v2).
# PODMAN_ROOT: a storage of the build's own (the tests'), whatever the host's podman was set up with.
podman=(podman --runtime runc ${PODMAN_STORAGE:+--storage-driver "$PODMAN_STORAGE"}
        ${PODMAN_ROOT:+--root "$PODMAN_ROOT/storage" --runroot "$PODMAN_ROOT/run"})
if [ ! -f "$cache/rootfs/etc/debian_version" ]; then
  rm -rf "$cache/rootfs"; mkdir -p "$cache"
  debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates,libldap-2.5-0,libsasl2-2 \
    bookworm "$cache/rootfs" "${mirror:-http://deb.debian.org/debian}"
  "${podman[@]}" rmi -f localhost/idp-base:bookworm >/dev/null 2>&1 || true
fi
# Imported once per root file system: a new import is a new base, and every layer on it is built again.
if ! "${podman[@]}" image exists localhost/idp-base:bookworm; then
  tar -C "$cache/rootfs" -c . | "${podman[@]}" import - localhost/idp-base:bookworm >/dev/null
fi
# The build's steps fetch from PyPI trusting the host's certificates (not kept in the image).
"${podman[@]}" build --network host -v /etc/ssl/certs/ca-certificates.crt:/etc/ssl/certs/ca-certificates.crt:ro --ignorefile deploy/containerignore -f deploy/Containerfile -t localhost/idp:latest .
