#!/bin/sh
# Entry point of the sandbox image: prepares the writable scratch space (HOME=/tmp, a tmpfs when
# the root file system is read-only) and runs the command, by default the codeact kernel.
if [ -n "${MPLCONFIGDIR:-}" ] && [ ! -e "$MPLCONFIGDIR" ] && [ -d /opt/codeact/mplconfig ]; then
  mkdir -p "$MPLCONFIGDIR" 2>/dev/null && cp -a /opt/codeact/mplconfig/. "$MPLCONFIGDIR/" 2>/dev/null
fi
exec "$@"
