#!/bin/bash
# Builds the sandbox's Debian root filesystem on the host and packs it as a tar for
# `docker import` (used where no registry can provide a base image).
# Usage: bootstrap.sh WORK_DIR SUITE MIRROR OUTPUT_TAR PACKAGES_FILE
# Needs root (debootstrap creates device nodes and chowns files). Prints progress on stdout.
#
# debootstrap makes a minimal system; the packages are then installed with apt-get inside it,
# exactly as the Dockerfile does on a registry base image, so both ways resolve dependencies
# (and alternatives) the same way. debootstrap --include would take the first alternative of
# every dependency and drag in compilers and Boost through python3-fonttools -> python3-scipy.
set -euo pipefail

work_dir=$1 suite=$2 mirror=$3 output=$4 packages_file=$5
rootfs="$work_dir/rootfs"

cleanup() {
  # debootstrap mounts /proc, /sys (and binds /dev in a container) inside the target; a failed
  # run can leave them mounted. Unmount before deleting, and never cross file systems.
  if [ -d "$rootfs" ]; then
    awk -v r="$rootfs" '$2 == r || index($2, r "/") == 1 { print $2 }' /proc/mounts \
      | sort -r | while read -r m; do umount -l "$m" || true; done
    rm -rf --one-file-system "$rootfs"
  fi
}
trap cleanup EXIT

packages=$(sed -e 's/#.*//' "$packages_file" | tr -s ' \t\n' ' ' | sed -e 's/^ //' -e 's/ $//')
cleanup
mkdir -p "$rootfs"
# Building in memory is several times faster than on a VM disk (dpkg writes tens of thousands of
# small files) and makes the cleanup a single umount. Falls back to the disk where mounting is
# not allowed.
if mount -t tmpfs -o size=8g,mode=755 codeact-rootfs "$rootfs" 2>/dev/null; then
  echo "bootstrap: building in memory (tmpfs at $rootfs)"
else
  echo "bootstrap: cannot mount a tmpfs; building on disk at $rootfs"
fi
mkdir -p "$rootfs/etc/dpkg/dpkg.cfg.d"
# dpkg fsyncs every file it unpacks; the result is packed into a tar right after, so a crash in
# between only means starting over.
echo force-unsafe-io > "$rootfs/etc/dpkg/dpkg.cfg.d/00codeact-unsafe-io"

echo "debootstrap: minimal Debian $suite from $mirror"
debootstrap --variant=minbase "$suite" "$rootfs" "$mirror"

echo "bootstrap: apt-get install $packages"
echo "deb $mirror $suite main" > "$rootfs/etc/apt/sources.list"
cp -L /etc/resolv.conf "$rootfs/etc/resolv.conf" 2>/dev/null || true
mount -t proc proc "$rootfs/proc"
export DEBIAN_FRONTEND=noninteractive LC_ALL=C
chroot "$rootfs" apt-get update -q
# shellcheck disable=SC2086
chroot "$rootfs" apt-get install -y -q --no-install-recommends $packages
umount "$rootfs/proc"

echo "bootstrap: cleaning apt caches"
rm -f "$rootfs/etc/dpkg/dpkg.cfg.d/00codeact-unsafe-io"
chroot "$rootfs" apt-get clean
rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/log/*.log \
  "$rootfs"/var/log/apt/* "$rootfs"/tmp/* "$rootfs"/root/.cache
# Docker provides these at run time.
: > "$rootfs/etc/hostname"
: > "$rootfs/etc/resolv.conf"

echo "bootstrap: packing $output"
tar --numeric-owner --xattrs --one-file-system -C "$rootfs" \
  --exclude=./proc/* --exclude=./sys/* --exclude=./dev/* -cf "$output.partial" .
mv "$output.partial" "$output"
echo "bootstrap: done ($(du -h "$output" | cut -f1))"
