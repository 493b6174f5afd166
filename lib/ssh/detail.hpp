// SPDX-License-Identifier: BSD-3-Clause
// Pieces shared by the two session implementations; not part of the interface.
#pragma once

#include "ssh/session.hpp"

#include "rpmem/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace rpmem::ssh::detail
{

std::unique_ptr<session> start_libssh(const destination &where, const std::string &command,
                                      const options &opts);
std::unique_ptr<session> start_external(const destination &where, const std::string &command,
                                        const options &opts);

/** A point in time to give up at; built from a timeout where negative means never. */
class deadline
{
public:
	using clock = std::chrono::steady_clock;

	explicit deadline(std::chrono::milliseconds timeout)
	    : infinite_(timeout.count() < 0), end_(clock::now() + std::max(timeout, {}))
	{
	}
	bool expired() const { return !infinite_ && clock::now() >= end_; }
	/** Milliseconds left for poll()-style calls: -1 when infinite, rounded up, at most cap. */
	int poll_ms(int cap = INT_MAX) const
	{
		if (infinite_)
			return cap == INT_MAX ? -1 : cap;
		auto left = std::chrono::ceil<std::chrono::milliseconds>(end_ - clock::now());
		return static_cast<int>(std::clamp<long long>(left.count(), 0, cap));
	}

private:
	bool infinite_;
	clock::time_point end_;
};

/** Bytes received but not yet read: read_exact() takes them only once enough are there, so a
 *  read that times out consumes nothing. */
class byte_queue
{
public:
	void append(const void *data, std::size_t len)
	{
		if (head_ > 0 && head_ >= bytes_.size() / 2) { // compact: amortised O(1) per byte
			bytes_.erase(bytes_.begin(),
			             bytes_.begin() + static_cast<std::ptrdiff_t>(head_));
			head_ = 0;
		}
		auto p = static_cast<const std::uint8_t *>(data);
		bytes_.insert(bytes_.end(), p, p + len);
	}
	std::size_t size() const { return bytes_.size() - head_; }
	/** Whether anything ever arrived (a command that answered once was installed). */
	bool ever_received() const { return !bytes_.empty() || head_ > 0; }
	void take(std::span<std::uint8_t> out)
	{
		std::copy_n(bytes_.begin() + static_cast<std::ptrdiff_t>(head_), out.size(),
		            out.begin());
		head_ += out.size();
	}

private:
	std::vector<std::uint8_t> bytes_;
	std::size_t head_ = 0;
};

/**
 * read_exact of both sessions: takes data.size() bytes of stdout from `out` once they are
 * there. Until then: `ended()` says whether stdout reached its end (then `throw_ended()`),
 * and `pump(until, polled)` waits for more (polled: not the first time). Throws ETIMEDOUT,
 * naming the command and host, once `timeout` passed without the bytes.
 */
template <class Ended, class ThrowEnded, class Pump>
void read_exact(byte_queue &out, std::span<std::uint8_t> data, std::chrono::milliseconds timeout,
                const std::string &command, const std::string &where, Ended ended,
                ThrowEnded throw_ended, Pump pump)
{
	deadline until(timeout);
	for (bool polled = false;; polled = true) {
		if (out.size() >= data.size()) {
			out.take(data);
			return;
		}
		if (ended())
			throw_ended();
		if (polled && until.expired())
			throw rpmem::error(ETIMEDOUT,
			                   fmt::format("no reply from '{}' on {} within {} "
			                               "ms ({} of {} bytes arrived)",
			                               command, where, timeout.count(), out.size(),
			                               data.size()));
		pump(until, polled);
	}
}

/** The command's stderr: kept up to a cap (error messages need the start, not megabytes). */
class stderr_capture
{
public:
	static constexpr std::size_t cap = 64 * 1024;
	void append(const void *data, std::size_t len)
	{
		auto keep = std::min(len, cap - std::min(cap, text_.size()));
		text_.append(static_cast<const char *>(data), keep);
	}
	const std::string &text() const { return text_; }

private:
	std::string text_;
};

/** "host:port", "[v6addr]:port" for messages. */
inline std::string endpoint(const std::string &host, unsigned port)
{
	auto h = host.find(':') == std::string::npos ? host : "[" + host + "]";
	return h + ":" + std::to_string(port);
}

/** "<what> on <host> ... : <stderr, trimmed to its last lines>" for ECONNRESET messages.
 *  answered: the command wrote to stdout before it ended (so it was there and ran). */
std::string ended_message(const std::string &command, const std::string &host,
                          const std::string &stderr_text, const std::string &status, bool answered);

} // namespace rpmem::ssh::detail
