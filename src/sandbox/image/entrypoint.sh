#!/bin/sh
# Entry point of the sandbox image: prepares the writable scratch space (HOME=/tmp, a tmpfs when
# the root file system is read-only) and runs the command, by default the codeact kernel.
# Started as root (how codeact runs the kernel: it drops to uid 1000 itself), the scratch space
# is made as uid 1000, whose it must be.
if [ -n "${MPLCONFIGDIR:-}" ] && [ ! -e "$MPLCONFIGDIR" ] && [ -d /opt/codeact/mplconfig ]; then
  as_sandbox=""
  if [ "$(id -u)" = 0 ]; then as_sandbox="setpriv --reuid=1000 --regid=1000 --clear-groups"; fi
  $as_sandbox sh -c 'mkdir -p "$MPLCONFIGDIR" && cp -a /opt/codeact/mplconfig/. "$MPLCONFIGDIR/"' \
    2>/dev/null
fi
exec "$@"
