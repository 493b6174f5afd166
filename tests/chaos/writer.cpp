// SPDX-License-Identifier: BSD-3-Clause
#include "chaos/writer.hpp"

#include "chaos/records.hpp"

#include "pmdk/pool_header.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

namespace rpmem::chaos
{

namespace
{

/** tests/support/pmemobj_log.c's struct history, as that program lays it out. */
struct obj_history {
	std::uint64_t committed[16];
	std::uint64_t longest_ns[16];
	std::uint64_t threads;
	std::uint64_t root_off;
	std::uint64_t log_off[16];
	std::uint64_t slots;
	std::uint64_t call_start_ns[16];
	std::uint64_t phase;
};

template <class T> T load(const T &v)
{
	return __atomic_load_n(&v, __ATOMIC_ACQUIRE);
}

constexpr std::size_t master_mb(writer_kind k)
{
	return k == writer_kind::pmemobj ? 16 : 8;
}
constexpr std::size_t replica_mb(writer_kind k)
{
	return k == writer_kind::pmemobj ? 20 : 10;
}

std::string slurp(const fs::path &p)
{
	std::ifstream in(p, std::ios::binary);
	std::stringstream ss;
	ss << in.rdbuf();
	return ss.str();
}

std::uint64_t realtime_ns()
{
	timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000u +
	       static_cast<std::uint64_t>(ts.tv_nsec);
}

/** The string value after `"key":"` from `at` on, or "" (the metrics file's JSON). */
std::string json_string(const std::string &text, const std::string &key, std::size_t at,
                        std::size_t *end = nullptr)
{
	const auto k = text.find("\"" + key + "\":\"", at);
	if (k == std::string::npos)
		return {};
	const auto begin = k + key.size() + 4;
	const auto close = text.find('"', begin);
	if (close == std::string::npos)
		return {};
	if (end)
		*end = close;
	return text.substr(begin, close - begin);
}

replica_state metrics_state(const std::string &s)
{
	if (s == "connected")
		return replica_state::in_sync;
	if (s == "catching_up")
		return replica_state::catching_up;
	return replica_state::away;
}

class file_reader
{
public:
	explicit file_reader(const fs::path &p) : fd_(::open(p.c_str(), O_RDONLY | O_CLOEXEC)) {}
	~file_reader()
	{
		if (fd_ >= 0)
			::close(fd_);
	}
	file_reader(const file_reader &) = delete;
	file_reader &operator=(const file_reader &) = delete;
	bool ok() const { return fd_ >= 0; }
	bool read(std::uint64_t off, void *buf, std::size_t n) const
	{
		return pread(fd_, buf, n, static_cast<off_t>(off)) == static_cast<ssize_t>(n);
	}

private:
	int fd_;
};

} // namespace

const char *name(writer_kind k) noexcept
{
	switch (k) {
	case writer_kind::pmemobj:
		return "stock libpmemobj (C ABI, synchronous, RPMEM_ON_OUTAGE=continue)";
	case writer_kind::rp_sync:
		return "replicated_pool synchronous, degrade";
	case writer_kind::rp_async:
		return "replicated_pool asynchronous, degrade";
	case writer_kind::pool:
		return "rpmem::pool, relaxed flushes and drains";
	}
	return "?";
}

writer::writer(writer_config c, cluster &cl, const fs::path &dir, const run_settings &s)
    : c_(std::move(c)), cl_(cl), dir_(dir / c_.name), s_(s)
{
	fs::create_directories(dir_);
	history_ = dir_ / "history";
	out_ = dir_ / "writer.out";
	err_ = dir_ / "writer.err";
	metrics_ = dir_ / "metrics.json";
	env_ = cl_.client_env();
	for (auto v :
	     {fmt::format("RPMEM_TIMEOUT={}", s.timeout.count()),
	      fmt::format("RPMEM_RECONNECT_TIMEOUT={}", s.reconnect_timeout.count()),
	      fmt::format("RPMEM_RECONNECT_DELAY={}", s.reconnect_delay.count()),
	      fmt::format("RPMEM_SSH_TIMEOUT={}", s.ssh_timeout.count()),
	      std::string("RPMEM_PROVIDER=tcp"), std::string("RPMEM_LOG_LEVEL=2"),
	      std::string("PMEM_IS_PMEM_FORCE=1"), fmt::format("CHAOS_PACE_US={}", s.pace_us),
	      fmt::format("PMEMOBJ_LOG_PACE_US={}", s.pace_us)})
		env_.push_back(v);
	if (c_.kind == writer_kind::pmemobj) {
		const char *asan = std::getenv("ASAN_OPTIONS");
		env_.push_back(std::string("ASAN_OPTIONS=") + (asan ? asan : "") +
		               ":detect_leaks=0"); // libpmemobj's own allocations
		env_.push_back("LD_LIBRARY_PATH=" RPMEM_BINARY_DIR "/lib");
		env_.push_back("RPMEM_STATS_FILE=" + metrics_.string());
		env_.push_back("RPMEM_STATS_INTERVAL=100");
		env_.push_back("RPMEM_ON_OUTAGE=continue");
	}
}

writer::~writer()
{
	proc_.reset();
	unmap_history(h_);
	if (obj_h_)
		munmap(obj_h_, sizeof(obj_history));
}

fs::path writer::master_set() const
{
	return has_poolset() ? dir_ / (c_.name + ".set") : fs::path();
}

fs::path writer::master_part() const
{
	return dir_ / (c_.kind == writer_kind::pool ? "memory" : c_.name + ".part");
}

fs::path writer::replica_set(int r) const
{
	return cl_.at(c_.hosts.at(static_cast<std::size_t>(r))).fs / replica_set_name();
}

fs::path writer::replica_part(int r) const
{
	return cl_.at(c_.hosts.at(static_cast<std::size_t>(r))).fs / (c_.name + ".part0");
}

void writer::write_poolsets()
{
	for (std::size_t r = 0; r < replicas(); ++r)
		std::ofstream(replica_set(static_cast<int>(r)))
		    << fmt::format("PMEMPOOLSET\n{}M {}\n", replica_mb(c_.kind),
		                   replica_part(static_cast<int>(r)).string());
	if (!has_poolset())
		return;
	std::string text =
	    fmt::format("PMEMPOOLSET\n{}M {}\n", master_mb(c_.kind), master_part().string());
	for (int h : c_.hosts)
		text += fmt::format("REPLICA {} {}\n", cl_.at(h).target(), replica_set_name());
	std::ofstream(master_set()) << text;
}

void writer::remove_pools()
{
	std::error_code ec;
	fs::remove(master_part(), ec);
	for (std::size_t r = 0; r < replicas(); ++r) {
		const auto &hfs = cl_.at(c_.hosts[r]).fs;
		for (const auto &e : fs::directory_iterator(hfs, ec))
			if (e.path().filename().string().rfind(c_.name + ".", 0) == 0 ||
			    e.path().filename().string().rfind(c_.name + "-promoted", 0) == 0)
				fs::remove(e.path(), ec);
	}
}

void writer::map()
{
	if (c_.kind == writer_kind::pmemobj) {
		const int fd = ::open(history_.c_str(), O_RDWR | O_CLOEXEC);
		if (fd < 0)
			throw std::runtime_error(history_.string() + ": " + std::strerror(errno));
		void *p =
		    mmap(nullptr, sizeof(obj_history), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		::close(fd);
		if (p == MAP_FAILED)
			throw std::runtime_error(history_.string() + ": mmap failed");
		obj_h_ = p;
	} else {
		h_ = map_history(history_.string(), false);
	}
}

std::string writer::command() const
{
	const auto threads = std::to_string(s_.threads);
	const auto bin = std::string(RPMEM_BINARY_DIR "/bin/");
	switch (c_.kind) {
	case writer_kind::pmemobj:
		return fmt::format("{}rpmem_pmemobj_log {} {} {} {}", bin,
		                   ph_ == phase::down && generation_ == 0 ? "run" : "run|resume",
		                   master_set().string(), history_.string(), threads);
	case writer_kind::rp_sync:
	case writer_kind::rp_async:
		return fmt::format("{}chaos_rp_writer create|open {} {} {} {}", bin,
		                   master_set().string(), history_.string(), threads,
		                   c_.kind == writer_kind::rp_sync ? "sync" : "async");
	case writer_kind::pool:
		return fmt::format("{}chaos_pool_writer create|open {} {} {} {} {}", bin,
		                   master_part().string(), history_.string(),
		                   cl_.at(c_.hosts[0]).target(), replica_set_name(), threads);
	}
	return {};
}

void writer::start(bool fresh)
{
	const auto threads = std::to_string(s_.threads);
	const auto bin = std::string(RPMEM_BINARY_DIR "/bin/");
	if (fresh) {
		unmap_history(h_);
		h_ = nullptr;
		if (obj_h_)
			munmap(obj_h_, sizeof(obj_history));
		obj_h_ = nullptr;
		remove_pools();
		std::error_code ec;
		fs::remove(history_, ec);
		fs::remove(metrics_, ec);
		// The history exists, at its final size, before the writer runs: the checks map
		// it once and never meet a short file.
		{
			std::ofstream f(history_, std::ios::binary);
		}
		fs::resize_file(history_, c_.kind == writer_kind::pmemobj ? sizeof(obj_history)
		                                                          : sizeof(history));
		map();
		write_poolsets();
		++generation_;
		metrics_seen_ = 0;
		metrics_obs_ = {};
	}
	std::vector<std::string> argv;
	switch (c_.kind) {
	case writer_kind::pmemobj:
		argv = {bin + "rpmem_pmemobj_log", fresh ? "run" : "resume", master_set().string(),
		        history_.string(), threads};
		break;
	case writer_kind::rp_sync:
	case writer_kind::rp_async:
		argv = {bin + "chaos_rp_writer",
		        fresh ? "create" : "open",
		        master_set().string(),
		        history_.string(),
		        threads,
		        c_.kind == writer_kind::rp_sync ? "sync" : "async"};
		break;
	case writer_kind::pool:
		argv = {bin + "chaos_pool_writer",
		        fresh ? "create" : "open",
		        master_part().string(),
		        history_.string(),
		        cl_.at(c_.hosts[0]).target(),
		        replica_set_name(),
		        threads};
		break;
	}
	{
		std::ofstream(out_, std::ios::app) << fmt::format(
		    "--- generation {} {}\n", generation_, fresh ? "created" : "opened");
		std::ofstream(err_, std::ios::app) << fmt::format(
		    "--- generation {} {}\n", generation_, fresh ? "created" : "opened");
	}
	out_offset_ = fs::file_size(out_);
	proc_ = std::make_unique<process>(cl_.in_client(argv), env_, out_, err_, true);
	ph_ = phase::starting;
}

std::optional<std::string> writer::poll_start()
{
	for (const auto &line : new_lines(out_, &out_offset_)) {
		if (line == "ready") {
			ph_ = phase::running;
			return std::string();
		}
		if (line.rfind("error", 0) == 0)
			return line;
	}
	if (auto st = proc_->poll()) {
		ph_ = phase::down;
		return fmt::format("it ended before it was ready ({}):\n{}",
		                   run_result{*st, {}, 0}.describe(), tail(err_, 15));
	}
	return std::nullopt;
}

std::string writer::poll_running()
{
	for (const auto &line : new_lines(out_, &out_offset_))
		if (line.rfind("error", 0) == 0)
			return line;
	if (auto st = proc_->poll()) {
		ph_ = phase::down;
		return fmt::format("it ended by itself ({}):\n{}",
		                   run_result{*st, {}, 0}.describe(), tail(err_, 15));
	}
	return {};
}

void writer::kill()
{
	if (proc_) {
		proc_->signal(SIGKILL);
		proc_->wait_for(std::chrono::milliseconds(-1));
	}
	ph_ = phase::down;
}

void writer::request_close()
{
	proc_->close_stdin();
	ph_ = phase::closing;
}

std::optional<std::string> writer::poll_close()
{
	std::string said;
	for (const auto &line : new_lines(out_, &out_offset_))
		said += line + "\n";
	if (said.find("closed\n") != std::string::npos &&
	    said.find("closed-away") == std::string::npos) {
		auto st = proc_->wait_for(std::chrono::seconds(30));
		ph_ = phase::closed;
		if (st && WIFEXITED(*st) && WEXITSTATUS(*st) == 0)
			return std::string();
		return fmt::format("it said closed but {}", st ? run_result{*st, {}, 0}.describe()
		                                               : std::string("did not exit"));
	}
	if (!said.empty() && said.find("close") != std::string::npos) {
		ph_ = phase::closed;
		return "close failed: " + said + tail(err_, 15);
	}
	if (auto st = proc_->poll()) {
		ph_ = phase::closed;
		return fmt::format("it ended without closing ({}):\n{}",
		                   run_result{*st, {}, 0}.describe(), tail(err_, 15));
	}
	return std::nullopt;
}

unsigned writer::threads() const
{
	if (obj_h_)
		return static_cast<unsigned>(load(static_cast<obj_history *>(obj_h_)->threads));
	return h_ ? static_cast<unsigned>(h_->threads) : 0;
}

std::vector<std::uint64_t> writer::acked() const
{
	std::vector<std::uint64_t> out(threads());
	for (unsigned t = 0; t < out.size(); ++t)
		out[t] = obj_h_ ? load(static_cast<obj_history *>(obj_h_)->committed[t])
		                : h_->acked[t].load();
	return out;
}

std::vector<std::uint64_t> writer::coverable() const
{
	if (c_.kind != writer_kind::rp_async)
		return acked();
	std::vector<std::uint64_t> out(threads());
	for (unsigned t = 0; t < out.size(); ++t)
		out[t] = h_->replicated[t].load();
	return out;
}

std::uint64_t writer::now() const
{
	return c_.kind == writer_kind::pmemobj ? realtime_ns() : monotonic_ns();
}

observation writer::observe()
{
	if (c_.kind != writer_kind::pmemobj) {
		observation o;
		if (!h_)
			return o;
		const auto seq = h_->obs_seq.load();
		if (seq % 2 != 0 || seq == 0)
			return o;
		o.after = h_->obs_ns.load();
		for (std::size_t r = 0; r < replicas(); ++r)
			o.states.push_back(static_cast<replica_state>(h_->state[r].load()));
		o.valid = h_->obs_seq.load() == seq;
		return o;
	}
	// The metrics file is written whole (renamed into place), one write at a time: the
	// states of a file were sampled after the previous file's time_unix_ns.
	const auto text = slurp(metrics_);
	const auto at = text.find("\"time_unix_ns\":");
	if (at == std::string::npos)
		return metrics_obs_;
	const std::uint64_t written = std::strtoull(text.c_str() + at + 15, nullptr, 10);
	if (written == metrics_seen_)
		return metrics_obs_;
	observation o;
	o.states.assign(replicas(), replica_state::unknown);
	std::size_t pos = at;
	for (;;) {
		std::size_t end = 0;
		const auto target = json_string(text, "target", pos, &end);
		if (target.empty())
			break;
		const auto state = json_string(text, "state", end, &pos);
		for (std::size_t r = 0; r < replicas(); ++r)
			if (target.find("@" + cl_.at(c_.hosts[r]).addr + ":") != std::string::npos)
				o.states[r] = metrics_state(state);
	}
	o.valid = metrics_seen_ != 0;
	o.after = metrics_seen_;
	metrics_seen_ = written;
	metrics_obs_ = o;
	return o;
}

std::vector<writer::call_info> writer::calls() const
{
	std::vector<call_info> out;
	const auto now_ns = monotonic_ns();
	if (obj_h_) {
		const auto *oh = static_cast<obj_history *>(obj_h_);
		for (unsigned t = 0; t < threads(); ++t) {
			call_info c;
			c.slot = t;
			const auto start = load(oh->call_start_ns[t]);
			c.running_ns = start && now_ns > start ? now_ns - start : 0;
			c.what = c.longest_what = "transaction";
			c.longest_ns = load(oh->longest_ns[t]);
			out.push_back(c);
		}
		return out;
	}
	if (!h_)
		return out;
	for (unsigned t = 0; t <= threads(); ++t) {
		call_info c;
		c.slot = t;
		const auto start = h_->call_start_ns[t].load();
		c.running_ns = start && now_ns > start ? now_ns - start : 0;
		c.what = rpmem::chaos::name(static_cast<call>(h_->call_what[t].load()));
		c.longest_ns = h_->longest_ns[t].load();
		c.longest_what = rpmem::chaos::name(static_cast<call>(h_->longest_what[t].load()));
		out.push_back(c);
	}
	return out;
}

bool writer::unmarked_by_gap(std::size_t r) const
{
	const bool rp = c_.kind == writer_kind::rp_sync || c_.kind == writer_kind::rp_async;
	return rp && h_ && r < max_replicas && h_->unmarked_at_open[r].load() != 0;
}

std::optional<bool> writer::marked(std::size_t r) const
{
	file_reader f(replica_part(static_cast<int>(r)));
	std::uint32_t compat = 0;
	char sig[8] = {};
	if (!f.ok() || !f.read(0, sig, 8) || !f.read(12, &compat, 4) || sig[0] == 0)
		return std::nullopt;
	return (pmdk::load_le(compat) & pmdk::feat_compat_rpmem_behind) != 0;
}

std::string writer::check_replica(std::size_t r, const std::vector<std::uint64_t> &covered,
                                  bool prefix, std::uint64_t window) const
{
	const auto part = replica_part(static_cast<int>(r));
	file_reader f(part);
	if (!f.ok())
		return fmt::format("cannot open {}: {}", part.string(), std::strerror(errno));
	const auto *oh = static_cast<const obj_history *>(obj_h_);
	record_layout l;
	l.slots = oh ? load(oh->slots) : h_->slots;
	l.record_at = [&](std::uint64_t t, std::uint64_t k) -> std::uint64_t {
		return oh ? load(oh->log_off[t]) + (k % l.slots) * record_size
		          : record_offset(l.slots, t, k);
	};
	l.count_at = [&](std::uint64_t t) -> std::uint64_t {
		return oh ? load(oh->root_off) + 8 * t : counters_offset + 8 * t;
	};
	return check_records(
	    fmt::format("replica {} ({})", r, part.string()),
	    [&](std::uint64_t off, void *buf, std::size_t n) { return f.read(off, buf, n); }, l,
	    covered, [this] { return acked(); }, prefix, window);
}

} // namespace rpmem::chaos
