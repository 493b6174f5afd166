// SPDX-License-Identifier: BSD-3-Clause
#include "ssh/detail.hpp"

#include <rpmem/error.hpp>

#include <cerrno>
#include <fmt/format.h>

namespace rpmem::ssh
{

std::unique_ptr<session> session::start(const destination &where, const std::string &command,
                                        const options &opts)
{
	if (command.empty())
		throw rpmem::error(EINVAL, fmt::format("no command to run on {}", where.str()));
	if (!opts.external_program.empty())
		return detail::start_external(where, command, opts);
	return detail::start_libssh(where, command, opts);
}

namespace detail
{

std::string ended_message(const std::string &command, const std::string &host,
                          const std::string &stderr_text, const std::string &status, bool answered)
{
	// One line: stderr lines joined, the tail kept (the shell's complaint comes last).
	constexpr std::size_t max_len = 2000;
	std::string text;
	for (char c : stderr_text) {
		if (c == '\n' && !text.empty() && !text.ends_with("; "))
			text += "; ";
		else if (c != '\r' && c != '\n')
			text += c;
	}
	while (text.ends_with(' ') || text.ends_with(';'))
		text.pop_back();
	if (text.size() > max_len)
		text = "..." + text.substr(text.size() - max_len);

	auto what = fmt::format("'{}' on {} ended{}", command, host,
	                        status.empty() ? "" : " (" + status + ")");
	if (text.empty() && status == "exit status 0")
		return what + " before sending what was expected";
	// Where to look next: a command that never answered and just exited may not be there; one
	// that answered, or was killed, ran, and its own log (or the node's) says more.
	if (text.empty() && (answered || status.starts_with("killed")))
		return what + " without a message on stderr";
	if (text.empty())
		return what + " without a message on stderr: check that it is installed there and "
		              "runs for the SSH user";
	return fmt::format("{}: {}", what, text);
}

} // namespace detail

} // namespace rpmem::ssh
