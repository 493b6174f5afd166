// SPDX-License-Identifier: BSD-3-Clause
// Writing a pool set back as text (to_string), checked by parsing the result again.
#include "poolset/poolset.hpp"

#include "rpmem/error.hpp"

#include <sstream>
#include <utility>

namespace rpmem::poolset
{

namespace
{

std::string format_size(std::uint64_t size)
{
	static constexpr std::pair<char, unsigned> suffixes[] = {
	    {'P', 50}, {'T', 40}, {'G', 30}, {'M', 20}, {'K', 10}};
	for (auto [suffix, shift] : suffixes) {
		std::uint64_t unit = 1ULL << shift;
		if (size % unit == 0)
			return std::to_string(size / unit) + suffix;
	}
	return std::to_string(size);
}

bool same_content(const poolset &a, const poolset &b)
{
	if (a.opts.single_header != b.opts.single_header ||
	    a.opts.no_headers != b.opts.no_headers || a.replicas.size() != b.replicas.size())
		return false;
	for (std::size_t r = 0; r < a.replicas.size(); ++r) {
		const replica &x = a.replicas[r], &y = b.replicas[r];
		if (x.target != y.target || x.descriptor != y.descriptor ||
		    x.parts.size() != y.parts.size())
			return false;
		for (std::size_t p = 0; p < x.parts.size(); ++p)
			if (x.parts[p].size != y.parts[p].size ||
			    x.parts[p].path != y.parts[p].path)
				return false;
	}
	return true;
}

} // namespace

std::string to_string(const poolset &ps)
{
	std::ostringstream out;
	out << "PMEMPOOLSET\n";
	if (ps.opts.single_header)
		out << "OPTION SINGLEHDR\n";
	if (ps.opts.no_headers)
		out << "OPTION NOHDRS\n";
	for (std::size_t r = 0; r < ps.replicas.size(); ++r) {
		const replica &rep = ps.replicas[r];
		if (rep.is_remote())
			out << "REPLICA " << rep.target << ' ' << rep.descriptor << '\n';
		else if (r > 0)
			out << "REPLICA\n";
		for (const auto &p : rep.parts)
			out << format_size(p.size) << ' ' << p.path << '\n';
	}
	// Parsing the result back is the one complete check that the text says what ps says
	// (a blank or '#' in a path, a remote replica with parts, zero sizes...).
	std::string text = out.str();
	try {
		if (same_content(parse(text, ps.file), ps))
			return text;
	} catch (const parse_error &e) {
		throw error(EINVAL, std::string("cannot write pool set: ") + e.what());
	}
	throw error(EINVAL, "cannot write pool set " + ps.file +
	                        ": a path, target or descriptor contains a blank or '#', "
	                        "or a remote replica has parts");
}

} // namespace rpmem::poolset
