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
bad=()
for f in "${files[@]}"; do
  clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [ "${#bad[@]}" -gt 0 ]; then
  echo "format.sh: ${#bad[@]} of ${#files[@]} files are not clang-formatted; run in $src:"
  echo "  clang-format -i ${bad[*]}"
  exit 1
fi
echo "format.sh: all ${#files[@]} files are clang-formatted"
