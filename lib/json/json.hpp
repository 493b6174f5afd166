// SPDX-License-Identifier: BSD-3-Clause
// A small JSON writer (RFC 8259): objects and arrays built in order, strings escaped, integers,
// doubles, booleans and null; one line. Used by rpmem --json (tools/rpmem) and the JSON metrics
// file (lib/client/stats_format). Header-only: pure code, no libfabric.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace rpmem
{

class json
{
public:
	json &begin_object() { return open('{'); }
	json &end_object() { return close('}'); }
	json &begin_array() { return open('['); }
	json &end_array() { return close(']'); }

	/** The next member's name (inside an object); a value call must follow. */
	json &key(std::string_view name)
	{
		separate();
		quote(name);
		out_ += ':';
		after_key_ = true;
		return *this;
	}
	json &value(std::string_view s)
	{
		separate();
		quote(s);
		return *this;
	}
	json &value(const char *s) { return value(std::string_view(s)); }
	json &value(const std::string &s) { return value(std::string_view(s)); }
	json &value(bool b)
	{
		separate();
		out_ += b ? "true" : "false";
		return *this;
	}
	json &value(std::uint64_t n)
	{
		separate();
		out_ += std::to_string(n);
		return *this;
	}
	json &value(std::int64_t n)
	{
		separate();
		out_ += std::to_string(n);
		return *this;
	}
	json &value(double d)
	{
		separate();
		out_ += fmt::format("{}", d);
		return *this;
	}
	json &value(unsigned n) { return value(std::uint64_t{n}); }
	json &value(int n) { return value(std::int64_t{n}); }
	json &null()
	{
		separate();
		out_ += "null";
		return *this;
	}
	template <class T> json &member(std::string_view name, const T &v)
	{
		return key(name).value(v);
	}

	const std::string &str() const { return out_; }

private:
	json &open(char c)
	{
		separate();
		out_ += c;
		first_ = true;
		return *this;
	}
	json &close(char c)
	{
		out_ += c;
		first_ = false;
		return *this;
	}
	void separate()
	{
		if (after_key_) {
			after_key_ = false;
			return;
		}
		if (!first_ && !out_.empty())
			out_ += ',';
		first_ = false;
	}
	void quote(std::string_view s)
	{
		out_ += '"';
		for (char c : s) {
			auto b = static_cast<unsigned char>(c);
			if (c == '"' || c == '\\') {
				out_ += '\\';
				out_ += c;
			} else if (b < 0x20) {
				out_ += fmt::format("\\u{:04x}", b);
			} else {
				out_ += c;
			}
		}
		out_ += '"';
	}

	std::string out_;
	bool first_ = true;
	bool after_key_ = false;
};

} // namespace rpmem
