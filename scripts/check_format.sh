#!/usr/bin/env bash
# Checks that the tracked C++ sources are formatted by .clang-format (Debian's clang-format) and
# that no comment line is over 100 characters (clang-format leaves comments alone: see
# ReflowComments in .clang-format). Exits 1 listing what is off; --fix formats in place first
# (over-long comments are still yours to break by hand).
#
#   scripts/check_format.sh [--fix]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if ! command -v clang-format >/dev/null; then
  echo "check_format: clang-format is not installed (scripts/setup.sh installs it)" >&2
  exit 2
fi
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.h' '*.cc')
if [ "${1:-}" = "--fix" ]; then
  clang-format -i "${files[@]}"
fi
status=0
if ! clang-format --dry-run --Werror "${files[@]}" 2>/tmp/check_format.$$; then
  grep -E '^[^ ].*: (error|warning):' /tmp/check_format.$$ | sed 's/: error: .*/: not formatted (run scripts\/check_format.sh --fix)/' | sort -u
  status=1
fi
rm -f /tmp/check_format.$$
python3 - "${files[@]}" <<'PY' || status=1
import sys
bad = 0
for path in sys.argv[1:]:
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if len(line) > 100 and line.lstrip().startswith("//"):
                print(f"{path}:{number}: comment of {len(line)} characters (limit 100)")
                bad += 1
sys.exit(1 if bad else 0)
PY
exit $status
