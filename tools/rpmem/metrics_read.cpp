// SPDX-License-Identifier: BSD-3-Clause
#include "metrics_read.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <tuple>
#include <utility>

namespace rpmem::tool
{

namespace
{

/** A parse failure: its message, with the line (Prometheus) or offset (JSON). */
struct malformed {
	std::string what;
};

// --- Prometheus text exposition format --------------------------------------------------

struct labels {
	std::vector<std::pair<std::string, std::string>> list;
	const std::string *get(std::string_view name) const
	{
		for (const auto &[k, v] : list)
			if (k == name)
				return &v;
		return nullptr;
	}
};

bool name_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}

bool name_char(char c)
{
	return name_start(c) || (c >= '0' && c <= '9');
}

/** A number as the format writes them: a float, NaN, +Inf or -Inf. */
std::optional<double> number(std::string_view token)
{
	if (token.empty() || token.size() > 64)
		return std::nullopt;
	const std::string s(token);
	char *end = nullptr;
	const double v = std::strtod(s.c_str(), &end);
	if (end != s.c_str() + s.size())
		return std::nullopt;
	return v;
}

/** One sample line: name, labels, value (a timestamp after it is ignored). */
std::tuple<std::string, labels, double> sample_line(std::string_view line)
{
	std::size_t i = 0;
	auto fail = [&](const std::string &what) -> malformed {
		return {fmt::format("{} at column {}", what, i + 1)};
	};
	if (!name_start(line[0]))
		throw fail("a metric name was expected");
	while (i < line.size() && name_char(line[i]))
		++i;
	std::string name(line.substr(0, i));
	labels ls;
	if (i < line.size() && line[i] == '{') {
		++i;
		while (i < line.size() && line[i] != '}') {
			const auto start = i;
			if (!name_start(line[i]) || line[i] == ':')
				throw fail("a label name was expected");
			while (i < line.size() && name_char(line[i]) && line[i] != ':')
				++i;
			std::string key(line.substr(start, i - start));
			if (i + 1 >= line.size() || line[i] != '=' || line[i + 1] != '"')
				throw fail("=\" was expected after label " + key);
			i += 2;
			std::string value;
			for (;; ++i) {
				if (i >= line.size())
					throw fail("the value of label " + key + " does not end");
				if (line[i] == '"')
					break;
				if (line[i] == '\\') {
					if (++i >= line.size())
						throw fail("an escape ends the line");
					const char e = line[i];
					if (e == 'n')
						value += '\n';
					else if (e == '\\' || e == '"')
						value += e;
					else
						throw fail(fmt::format("unknown escape \\{}", e));
				} else {
					value += line[i];
				}
			}
			++i; // the closing quote
			ls.list.emplace_back(std::move(key), std::move(value));
			if (i < line.size() && line[i] == ',')
				++i;
			else if (i >= line.size() || line[i] != '}')
				throw fail("',' or '}' was expected");
		}
		if (i >= line.size())
			throw fail("the labels do not end");
		++i; // '}'
	}
	if (i >= line.size() || (line[i] != ' ' && line[i] != '\t'))
		throw fail("a space and a value were expected");
	while (i < line.size() && (line[i] == ' ' || line[i] == '\t'))
		++i;
	auto end = line.find_first_of(" \t", i);
	if (end == std::string_view::npos)
		end = line.size();
	auto v = number(line.substr(i, end - i));
	if (!v)
		throw fail(fmt::format("'{}' is not a number", line.substr(i, end - i)));
	return {std::move(name), std::move(ls), *v};
}

/** The pools of a file, in the order they first appear. */
class pool_table
{
public:
	pool_sample &at(const std::string &target, const std::string &descriptor,
	                std::optional<std::uint64_t> replica)
	{
		const auto key = std::make_tuple(target, descriptor, replica);
		auto it = index_.find(key);
		if (it != index_.end())
			return pools_[it->second];
		index_.emplace(key, pools_.size());
		auto &p = pools_.emplace_back();
		p.target = target;
		p.descriptor = descriptor;
		p.replica = replica;
		return p;
	}
	std::vector<pool_sample> take() { return std::move(pools_); }

private:
	std::map<std::tuple<std::string, std::string, std::optional<std::uint64_t>>, std::size_t>
	    index_;
	std::vector<pool_sample> pools_;
};

std::optional<std::uint64_t> replica_number(const std::string *text)
{
	if (!text)
		return std::nullopt;
	auto v = number(*text);
	if (!v || *v < 0 || *v != std::floor(*v) || *v > 1e15)
		throw malformed{"replica label '" + *text + "' is not a number"};
	return static_cast<std::uint64_t>(*v);
}

/** Puts one sample of an rpmem metric into its pool. Metrics it does not know (a newer
 *  librpmem's) are left out. */
void take_sample(pool_sample &p, std::string_view name, const labels &ls, double v)
{
	auto label = [&](std::string_view n) {
		const auto *s = ls.get(n);
		return s ? *s : std::string();
	};
	if (name == "rpmem_pool_info") {
		p.provider = label("provider");
		p.method = label("method");
		p.mode = label("mode");
		p.state = label("state");
	} else if (name == "rpmem_pool_lanes") {
		p.lanes = v;
	} else if (name == "rpmem_operations_total") {
		const auto op = label("op");
		double *to = op == "persist"        ? &p.persists
		             : op == "flush"        ? &p.flushes
		             : op == "drain"        ? &p.drains
		             : op == "read"         ? &p.reads
		             : op == "deep_persist" ? &p.deep_persists
		                                    : nullptr;
		if (to)
			*to = v;
	} else if (name == "rpmem_bytes_total") {
		const auto op = label("op");
		if (op == "persist")
			p.bytes_persisted = v;
		else if (op == "read")
			p.bytes_read = v;
	} else if (name == "rpmem_round_trips_total") {
		p.round_trips = v;
	} else if (name == "rpmem_errors_total") {
		p.errors = v;
	} else if (name == "rpmem_last_persist_timestamp_seconds") {
		p.last_persist = v;
	} else if (name == "rpmem_round_trip_seconds") {
		const auto q = number(label("quantile"));
		auto *to = !q            ? nullptr
		           : *q == 0.5   ? &p.p50
		           : *q == 0.9   ? &p.p90
		           : *q == 0.99  ? &p.p99
		           : *q == 0.999 ? &p.p999
		                         : nullptr;
		if (to)
			*to = v;
	} else if (name == "rpmem_async_lag_bytes") {
		p.lag_bytes = v;
	} else if (name == "rpmem_async_lag_seconds") {
		p.lag_seconds = v;
	} else if (name == "rpmem_async_throttled_total") {
		p.throttled = v;
	} else if (name == "rpmem_async_lag_bound_bytes") {
		p.lag_bound_bytes = v;
	} else if (name == "rpmem_async_lag_bound_seconds") {
		p.lag_bound_seconds = v;
	} else if (name == "rpmem_replica_bytes_to_go") {
		p.bytes_to_go = v;
	}
}

std::optional<metrics_file> parse_prometheus(std::string_view text)
{
	metrics_file f;
	pool_table pools;
	bool any = false;
	std::size_t number_of_line = 0;
	for (std::size_t at = 0; at < text.size();) {
		auto end = text.find('\n', at);
		if (end == std::string_view::npos)
			end = text.size();
		auto line = text.substr(at, end - at);
		at = end + 1;
		++number_of_line;
		while (!line.empty() && (line.back() == '\r' || line.back() == ' '))
			line.remove_suffix(1);
		while (!line.empty() && (line.front() == ' ' || line.front() == '\t'))
			line.remove_prefix(1);
		if (line.empty() || line[0] == '#')
			continue;
		try {
			auto [name, ls, v] = sample_line(line);
			if (name.rfind("rpmem_", 0) != 0)
				continue;
			any = true;
			if (name == "rpmem_stats_timestamp_seconds") {
				f.written = v;
				continue;
			}
			const auto *target = ls.get("target");
			const auto *descriptor = ls.get("descriptor");
			if (!target || !descriptor)
				continue;
			take_sample(
			    pools.at(*target, *descriptor, replica_number(ls.get("replica"))), name,
			    ls, v);
		} catch (const malformed &m) {
			throw malformed{fmt::format("line {}: {}", number_of_line, m.what)};
		}
	}
	if (!any)
		return std::nullopt;
	f.pools = pools.take();
	return f;
}

// --- JSON (RFC 8259), as much as the metrics file uses ------------------------------------

struct jvalue {
	enum class kind { null, boolean, number, string, array, object } k = kind::null;
	double num = 0;
	bool flag = false;
	std::string str;
	std::vector<jvalue> items;      // an array's, or an object's member values
	std::vector<std::string> names; // an object's member names

	const jvalue *get(std::string_view name) const
	{
		if (k != kind::object)
			return nullptr;
		for (std::size_t i = 0; i < names.size(); ++i)
			if (names[i] == name)
				return &items[i];
		return nullptr;
	}
	std::optional<double> number_of(std::string_view name) const
	{
		const auto *v = get(name);
		if (!v || v->k != kind::number)
			return std::nullopt;
		return v->num;
	}
	std::string string_of(std::string_view name) const
	{
		const auto *v = get(name);
		return v && v->k == kind::string ? v->str : std::string();
	}
};

class json_parser
{
public:
	explicit json_parser(std::string_view text) : s_(text) {}

	jvalue document()
	{
		auto v = value(0);
		space();
		if (i_ != s_.size())
			fail("text after the JSON value");
		return v;
	}

private:
	static constexpr int max_depth = 32;

	[[noreturn]] void fail(const std::string &what) const
	{
		throw malformed{fmt::format("JSON: {} at offset {}", what, i_)};
	}
	void space()
	{
		while (i_ < s_.size() &&
		       (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\t'))
			++i_;
	}
	bool take(char c)
	{
		space();
		if (i_ < s_.size() && s_[i_] == c) {
			++i_;
			return true;
		}
		return false;
	}
	void expect(char c)
	{
		if (!take(c))
			fail(fmt::format("'{}' expected", c));
	}
	bool word(std::string_view w)
	{
		if (s_.substr(i_, w.size()) != w)
			return false;
		i_ += w.size();
		return true;
	}

	jvalue value(int depth)
	{
		if (depth > max_depth)
			fail("nested too deep");
		space();
		if (i_ >= s_.size())
			fail("a value expected");
		jvalue v;
		const char c = s_[i_];
		if (c == '{') {
			++i_;
			v.k = jvalue::kind::object;
			if (take('}'))
				return v;
			do {
				space();
				v.names.push_back(string());
				expect(':');
				v.items.push_back(value(depth + 1));
			} while (take(','));
			expect('}');
		} else if (c == '[') {
			++i_;
			v.k = jvalue::kind::array;
			if (take(']'))
				return v;
			do
				v.items.push_back(value(depth + 1));
			while (take(','));
			expect(']');
		} else if (c == '"') {
			v.k = jvalue::kind::string;
			v.str = string();
		} else if (word("true") || word("false")) {
			v.k = jvalue::kind::boolean;
			v.flag = c == 't';
		} else if (word("null")) {
		} else {
			v.k = jvalue::kind::number;
			v.num = number_token();
		}
		return v;
	}

	double number_token()
	{
		const auto start = i_;
		while (i_ < s_.size() &&
		       (s_[i_] == '-' || s_[i_] == '+' || s_[i_] == '.' || s_[i_] == 'e' ||
		        s_[i_] == 'E' || (s_[i_] >= '0' && s_[i_] <= '9')))
			++i_;
		auto v = number(s_.substr(start, i_ - start));
		if (!v || !std::isfinite(*v))
			fail("a value expected");
		return *v;
	}

	unsigned hex4()
	{
		if (i_ + 4 > s_.size())
			fail("\\u needs four hex digits");
		unsigned u = 0;
		for (int k = 0; k < 4; ++k) {
			const char h = s_[i_++];
			u = u * 16 + (h >= '0' && h <= '9'   ? unsigned(h - '0')
			              : h >= 'a' && h <= 'f' ? unsigned(h - 'a' + 10)
			              : h >= 'A' && h <= 'F'
			                  ? unsigned(h - 'A' + 10)
			                  : (fail("\\u needs four hex digits"), 0u));
		}
		return u;
	}

	static void utf8(std::string &out, unsigned cp)
	{
		if (cp < 0x80) {
			out += char(cp);
		} else if (cp < 0x800) {
			out += char(0xc0 | (cp >> 6));
			out += char(0x80 | (cp & 0x3f));
		} else if (cp < 0x10000) {
			out += char(0xe0 | (cp >> 12));
			out += char(0x80 | ((cp >> 6) & 0x3f));
			out += char(0x80 | (cp & 0x3f));
		} else {
			out += char(0xf0 | (cp >> 18));
			out += char(0x80 | ((cp >> 12) & 0x3f));
			out += char(0x80 | ((cp >> 6) & 0x3f));
			out += char(0x80 | (cp & 0x3f));
		}
	}

	std::string string()
	{
		if (i_ >= s_.size() || s_[i_] != '"')
			fail("a string expected");
		++i_;
		std::string out;
		for (;;) {
			if (i_ >= s_.size())
				fail("the string does not end");
			const char c = s_[i_++];
			if (c == '"')
				return out;
			if (static_cast<unsigned char>(c) < 0x20)
				fail("a control character in a string");
			if (c != '\\') {
				out += c;
				continue;
			}
			if (i_ >= s_.size())
				fail("the string does not end");
			switch (const char e = s_[i_++]) {
			case '"':
			case '\\':
			case '/':
				out += e;
				break;
			case 'b':
				out += '\b';
				break;
			case 'f':
				out += '\f';
				break;
			case 'n':
				out += '\n';
				break;
			case 'r':
				out += '\r';
				break;
			case 't':
				out += '\t';
				break;
			case 'u': {
				unsigned cp = hex4();
				if (cp >= 0xd800 && cp < 0xdc00 && word("\\u")) {
					const unsigned low = hex4();
					if (low < 0xdc00 || low >= 0xe000)
						fail("a lone surrogate");
					cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
				} else if (cp >= 0xd800 && cp < 0xe000) {
					fail("a lone surrogate");
				}
				utf8(out, cp);
				break;
			}
			default:
				fail(fmt::format("unknown escape \\{}", e));
			}
		}
	}

	std::string_view s_;
	std::size_t i_ = 0;
};

pool_sample json_pool(const jvalue &j)
{
	pool_sample p;
	p.target = j.string_of("target");
	p.descriptor = j.string_of("descriptor");
	if (auto r = j.number_of("replica")) {
		if (*r < 0 || *r != std::floor(*r) || *r > 1e15)
			throw malformed{"JSON: a pool's replica is not a number"};
		p.replica = static_cast<std::uint64_t>(*r);
	}
	p.provider = j.string_of("provider");
	p.method = j.string_of("method");
	p.mode = j.string_of("mode");
	p.state = j.string_of("state");
	p.lanes = j.number_of("lanes").value_or(0);
	if (const auto *o = j.get("operations")) {
		p.persists = o->number_of("persist").value_or(0);
		p.flushes = o->number_of("flush").value_or(0);
		p.drains = o->number_of("drain").value_or(0);
		p.reads = o->number_of("read").value_or(0);
		p.deep_persists = o->number_of("deep_persist").value_or(0);
	}
	if (const auto *b = j.get("bytes")) {
		p.bytes_persisted = b->number_of("persist").value_or(0);
		p.bytes_read = b->number_of("read").value_or(0);
	}
	p.round_trips = j.number_of("round_trips").value_or(0);
	p.errors = j.number_of("errors").value_or(0);
	p.last_persist = j.number_of("last_persist_unix_ns").value_or(0) / 1e9;
	if (const auto *q = j.get("round_trip_ns")) {
		auto seconds = [&](std::string_view n) -> std::optional<double> {
			if (auto v = q->number_of(n))
				return *v / 1e9;
			return std::nullopt;
		};
		p.p50 = seconds("p50");
		p.p90 = seconds("p90");
		p.p99 = seconds("p99");
		p.p999 = seconds("p999");
	}
	p.lag_bytes = j.number_of("async_lag_bytes");
	p.lag_seconds = j.number_of("async_lag_seconds");
	p.throttled = j.number_of("async_throttled");
	p.lag_bound_bytes = j.number_of("async_lag_bound_bytes");
	p.lag_bound_seconds = j.number_of("async_lag_bound_seconds");
	p.bytes_to_go = j.number_of("bytes_to_go");
	return p;
}

std::optional<metrics_file> parse_json(std::string_view text)
{
	const auto doc = json_parser(text).document();
	const auto *pools = doc.get("pools");
	const auto written = doc.number_of("time_unix_ns");
	if (!pools || pools->k != jvalue::kind::array || !written)
		return std::nullopt;
	metrics_file f;
	f.written = *written / 1e9;
	for (const auto &p : pools->items)
		if (p.k == jvalue::kind::object)
			f.pools.push_back(json_pool(p));
	return f;
}

} // namespace

std::optional<metrics_file> parse_metrics(std::string_view text, std::string *why)
{
	const auto first = text.find_first_not_of(" \t\r\n");
	const bool json = first != std::string_view::npos && text[first] == '{';
	try {
		auto f = json ? parse_json(text) : parse_prometheus(text);
		if (!f && why)
			*why = json ? "a JSON object without librpmem's time_unix_ns and pools"
			            : "no rpmem metric in it";
		return f;
	} catch (const malformed &m) {
		if (why)
			*why = m.what;
		return std::nullopt;
	}
}

} // namespace rpmem::tool
