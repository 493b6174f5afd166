#!/usr/bin/env bash
# Fails when a C or C++ source of the project differs from what clang-format makes of it
# (.clang-format at the top). Usage: format.sh SOURCE_DIR. Fix: clang-format -i on the files named.
set -uo pipefail
src=${1:?usage: format.sh SOURCE_DIR}
command -v clang-format >/dev/null ||
  { echo "format.sh: clang-format is missing: run scripts/install-deps.sh" >&2; exit 1; }
cd "$src" || exit 1
mapfile -t files < <(find daemon lib include examples bench tools tests \
  -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.c' -o -name '*.h' \) | sort)
# One clang-format for all files (a process per file cost most of a minute): each file not
# formatted is named in a "FILE:LINE:COL: error: code should be clang-formatted" line.
out=$(clang-format --dry-run -Werror "${files[@]}" 2>&1 >/dev/null)
status=$?
mapfile -t bad < <(sed -nE 's/^(.*):[0-9]+:[0-9]+: error: code should be clang-formatted.*/\1/p' <<<"$out" | sort -u)
if [ "$status" -ne 0 ] && [ "${#bad[@]}" -eq 0 ]; then
  echo "format.sh: clang-format failed (exit $status) without naming a file to format:"
  head -20 <<<"$out"
  exit 1
fi
if [ "${#bad[@]}" -gt 0 ]; then
  echo "format.sh: ${#bad[@]} of ${#files[@]} files are not clang-formatted; run in $src:"
  echo "  clang-format -i ${bad[*]}"
  exit 1
fi
echo "format.sh: all ${#files[@]} files are clang-formatted"
