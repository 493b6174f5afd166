#!/usr/bin/env bash
# librpmemcpp.so.0 exports the C++ API and nothing else: every defined dynamic symbol is a
# member of rpmem::pool, rpmem::replicated_pool (not its private impl) or rpmem::error, or the
# typeinfo/vtable of one of those; nothing from lib/ internals (rpmem::client, rpmem::fabric,
# ...), libstdc++ template instantiations or fmt leaks. The API's entry points are present and
# the SONAME is librpmemcpp.so.0. Usage: exports_cpp.sh path/to/librpmemcpp.so.0
set -euo pipefail
lib=${1:?usage: $0 path/to/librpmemcpp.so.0}
[ -f "$lib" ] || { echo "FAIL: $lib does not exist: build the rpmemcpp target"; exit 1; }

soname=$(readelf -d "$lib" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
[ "$soname" = librpmemcpp.so.0 ] || { echo "FAIL: SONAME of $lib is '$soname', not librpmemcpp.so.0"; exit 1; }

# Demangled names of the defined dynamic symbols (type A: version nodes, not symbols).
exported=$(nm -D --defined-only -C "$lib" | awk '$2 != "A" { $1 = ""; $2 = ""; sub(/^  /, ""); print }' | sort -u)
[ -n "$exported" ] || { echo "FAIL: $lib exports nothing"; exit 1; }

allowed='^((typeinfo for |typeinfo name for |vtable for )?rpmem::(pool|replicated_pool|error)(::|$))'
leaks=$(echo "$exported" | grep -Ev "$allowed" || true)
impl=$(echo "$exported" | grep -E '^(typeinfo for |typeinfo name for |vtable for )?rpmem::replicated_pool::impl::' || true)
if [ -n "$leaks$impl" ]; then
	echo "FAIL: $lib exports symbols outside the C++ API (mark only public classes RPMEM_API;"
	echo "      lib/cpp/librpmemcpp.map and -Wl,--exclude-libs,ALL keep the rest local):"
	printf '%s\n' "$leaks" "$impl" | sed '/^$/d; s/^/  /'
	exit 1
fi

# The entry points applications call must be there (a library exporting nothing passes the
# check above).
missing=0
for want in \
	'rpmem::pool::create(' 'rpmem::pool::open(' 'rpmem::pool::remove(' 'rpmem::pool::persist(' \
	'rpmem::pool::flush(' 'rpmem::pool::drain(' 'rpmem::pool::read(' 'rpmem::pool::close()' \
	'rpmem::pool::offset_of(' 'rpmem::pool::~pool()' \
	'rpmem::replicated_pool::create(' 'rpmem::replicated_pool::open(' \
	'rpmem::replicated_pool::persist(' 'rpmem::replicated_pool::barrier()' \
	'rpmem::replicated_pool::resync(' 'rpmem::replicated_pool::~replicated_pool()' \
	'typeinfo for rpmem::error' 'vtable for rpmem::error'; do
	if ! grep -qF -- "$want" <<<"$exported"; then
		echo "FAIL: $lib does not export $want"
		missing=1
	fi
done
[ $missing = 0 ] || exit 1
echo "OK: $(echo "$exported" | wc -l) symbols, all rpmem::pool, rpmem::replicated_pool, rpmem::error; SONAME $soname"
