// SPDX-License-Identifier: BSD-3-Clause
// Setting up a libssh session: OpenSSH config, TCP connect, strict host key check, public-key
// authentication, exec channel. Each step throws rpmem::error with its own errno.
#include "ssh/libssh_session.hpp"
#include "ssh/session.hpp"
#include "ssh/tcp_connect.hpp"

#include <rpmem/error.hpp>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <openssl/crypto.h>
#include <unistd.h>

namespace rpmem::ssh::detail
{

namespace
{

/** A string libssh allocated (ssh_options_get and friends). */
struct ssh_chars {
	char *p = nullptr;
	~ssh_chars() { ssh_string_free_char(p); }
	std::string str() const { return p ? p : ""; }
};

std::string get_option(ssh_session s, ssh_options_e what)
{
	ssh_chars value;
	if (ssh_options_get(s, what, &value.p) != SSH_OK)
		return {};
	return value.str();
}

template <class T>
void set_option(ssh_session s, ssh_options_e what, const T *value, const char *name)
{
	if (ssh_options_set(s, what, value) != SSH_OK)
		throw rpmem::error(
		    EINVAL, fmt::format("libssh rejected option {}: {}", name, ssh_get_error(s)));
}

std::string server_key_fingerprint(ssh_session s)
{
	ssh_key key = nullptr;
	if (ssh_get_server_publickey(s, &key) != SSH_OK)
		return "unknown";
	unsigned char *hash = nullptr;
	std::size_t len = 0;
	std::string text = "unknown";
	if (ssh_get_publickey_hash(key, SSH_PUBLICKEY_HASH_SHA256, &hash, &len) == SSH_OK) {
		ssh_chars fp{ssh_get_fingerprint_hash(SSH_PUBLICKEY_HASH_SHA256, hash, len)};
		text = fmt::format("{} key {}", ssh_key_type_to_char(ssh_key_type(key)), fp.str());
		ssh_clean_pubkey_hash(&hash);
	}
	ssh_key_free(key);
	return text;
}

} // namespace

libssh_session::libssh_session(const destination &where, const std::string &command,
                               const options &opts)
    : target_(where), command_(command), opts_(opts)
{
	configure();
	connect();
	verify_host_key();
	authenticate();
	start_command();
}

void libssh_session::configure()
{
	h_.ssh = ssh_new();
	if (h_.ssh == nullptr)
		throw rpmem::error(ENOMEM, "cannot create a libssh session");
	auto s = h_.ssh;
	// The host first: config "Host" patterns match against it, HostName then replaces it.
	set_option(s, SSH_OPTIONS_HOST, target_.host.c_str(), "host");

	const char *config = opts_.config_file.empty() ? nullptr : opts_.config_file.c_str();
	if (config && access(config, R_OK) != 0) {
		int err = errno;
		throw rpmem::error(err, fmt::format("cannot read ssh config file {} "
		                                    "(RPMEM_SSH_CONFIG): {}",
		                                    config, strerror(err)));
	}
	if (ssh_options_parse_config(s, config) != SSH_OK)
		throw rpmem::error(EINVAL, fmt::format("cannot parse ssh config {}: {}",
		                                       config ? config : "~/.ssh/config",
		                                       ssh_get_error(s)));

	// Explicit settings override the config, as on the ssh command line.
	if (!target_.user.empty())
		set_option(s, SSH_OPTIONS_USER, target_.user.c_str(), "user");
	if (target_.port) {
		unsigned int port = *target_.port;
		set_option(s, SSH_OPTIONS_PORT, &port, "port");
	}
	if (!opts_.known_hosts_file.empty())
		set_option(s, SSH_OPTIONS_KNOWNHOSTS, opts_.known_hosts_file.c_str(),
		           "known_hosts");
	long ms = static_cast<long>(opts_.connect_timeout.count());
	long sec = ms / 1000, usec = (ms % 1000) * 1000;
	set_option(s, SSH_OPTIONS_TIMEOUT, &sec, "timeout");
	set_option(s, SSH_OPTIONS_TIMEOUT_USEC, &usec, "timeout");
	int one = 1;
	set_option(s, SSH_OPTIONS_NODELAY, &one, "nodelay");
	// A library must not chatter on the application's stderr: the config's LogLevel is meant
	// for ssh. LIBSSH_DEBUG=1..4 (read by libssh itself) still turns libssh's log on.
	if (std::getenv("LIBSSH_DEBUG") == nullptr) {
		int nolog = SSH_LOG_NOLOG;
		set_option(s, SSH_OPTIONS_LOG_VERBOSITY, &nolog, "log verbosity");
	}

	unsigned int port = 22;
	ssh_options_get_port(s, &port);
	where_ = fmt::format("{}@{}", get_option(s, SSH_OPTIONS_USER),
	                     endpoint(get_option(s, SSH_OPTIONS_HOST), port));
	if (get_option(s, SSH_OPTIONS_HOST) != target_.host)
		where_ += fmt::format(" ({})", target_.host);
}

void libssh_session::connect()
{
	auto s = h_.ssh;
	// Our own TCP connect gives precise errnos; a ProxyCommand is left to libssh.
	if (get_option(s, SSH_OPTIONS_PROXYCOMMAND).empty()) {
		unsigned int port = 22;
		ssh_options_get_port(s, &port);
		h_.fd = tcp_connect(get_option(s, SSH_OPTIONS_HOST),
		                    static_cast<std::uint16_t>(port), opts_.connect_timeout);
		if (ssh_options_set(s, SSH_OPTIONS_FD, &h_.fd) != SSH_OK)
			throw rpmem::error(EINVAL, fmt::format("libssh rejected the socket: {}",
			                                       ssh_get_error(s)));
	}
	if (ssh_connect(s) == SSH_OK)
		return;
	std::string why = ssh_get_error(s);
	int err = why.find("imeout") != std::string::npos ? ETIMEDOUT : EPROTO;
	throw rpmem::error(err, fmt::format("SSH handshake with {} failed: {}{}", where_, why,
	                                    err == ETIMEDOUT
	                                        ? fmt::format(" (limit {} ms, RPMEM_SSH_TIMEOUT)",
	                                                      opts_.connect_timeout.count())
	                                        : ""));
}

void libssh_session::verify_host_key()
{
	auto s = h_.ssh;
	auto state = ssh_session_is_known_server(s);
	if (state == SSH_KNOWN_HOSTS_OK)
		return;
	auto file = get_option(s, SSH_OPTIONS_KNOWNHOSTS);
	unsigned int port = 22;
	ssh_options_get_port(s, &port);
	auto host = get_option(s, SSH_OPTIONS_HOST);
	auto scan = fmt::format("ssh-keyscan -p {} {} >> {}", port, host, file);
	auto key = server_key_fingerprint(s);
	switch (state) {
	case SSH_KNOWN_HOSTS_UNKNOWN:
	case SSH_KNOWN_HOSTS_NOT_FOUND: // libssh says UNKNOWN or NOT_FOUND for a missing file
		throw rpmem::error(ENOKEY,
		                   fmt::format("host key of {} is unknown: {}; verify the "
		                               "server's {} and add it ({})",
		                               where_,
		                               access(file.c_str(), F_OK) == 0
		                                   ? "it is not in " + file
		                                   : "known_hosts file " + file + " does not exist",
		                               key, scan));
	case SSH_KNOWN_HOSTS_CHANGED:
	case SSH_KNOWN_HOSTS_OTHER:
		throw rpmem::error(
		    EKEYREJECTED,
		    fmt::format("host key of {} CHANGED: the server offers {}, which differs from "
		                "the {} recorded in {}: possible man-in-the-middle attack! If the "
		                "host was legitimately re-keyed, remove the old entry (ssh-keygen "
		                "-R '{}' -f {}) and add the new one",
		                where_, key, state == SSH_KNOWN_HOSTS_OTHER ? "key type" : "key",
		                file, port == 22 ? host : fmt::format("[{}]:{}", host, port),
		                file));
	default:
		throw rpmem::error(EPROTO,
		                   fmt::format("cannot check the host key of {} against {}: {}",
		                               where_, file, ssh_get_error(s)));
	}
}

void libssh_session::authenticate()
{
	if (!opts_.identity_files.empty())
		return authenticate_with_files();
	auto s = h_.ssh;
	int rc = ssh_userauth_publickey_auto(s, nullptr, nullptr);
	if (rc == SSH_AUTH_SUCCESS)
		return;
	if (rc == SSH_AUTH_ERROR)
		throw rpmem::error(EPROTO, fmt::format("authentication with {} failed: {}", where_,
		                                       ssh_get_error(s)));
	throw rpmem::error(EACCES,
	                   fmt::format("no key accepted by {}: tried ssh-agent, the "
	                               "config's IdentityFile and ~/.ssh/id_{{ed25519,ecdsa,"
	                               "rsa}}; add your public key to the user's "
	                               "authorized_keys there, or name the key in "
	                               "RPMEM_SSH_IDENTITY",
	                               where_));
}

void libssh_session::authenticate_with_files()
{
	auto s = h_.ssh;
	std::string tried;
	for (const auto &file : opts_.identity_files) {
		ssh_key key = nullptr;
		int rc = ssh_pki_import_privkey_file(file.c_str(), nullptr, nullptr, nullptr, &key);
		if (rc != SSH_OK) {
			tried += fmt::format("{}{} (unreadable, or needs a passphrase)",
			                     tried.empty() ? "" : ", ", file);
			continue;
		}
		rc = ssh_userauth_publickey(s, nullptr, key);
		ssh_key_free(key);
		if (rc == SSH_AUTH_SUCCESS)
			return;
		if (rc == SSH_AUTH_ERROR)
			throw rpmem::error(EPROTO, fmt::format("authentication with {} failed: {}",
			                                       where_, ssh_get_error(s)));
		tried += fmt::format("{}{} (rejected)", tried.empty() ? "" : ", ", file);
	}
	throw rpmem::error(EACCES, fmt::format("no key accepted by {}: tried {}; add the public "
	                                       "key to the user's authorized_keys there",
	                                       where_, tried));
}

void libssh_session::start_command()
{
	auto s = h_.ssh;
	h_.channel = ssh_channel_new(s);
	h_.event = ssh_event_new();
	if (h_.channel == nullptr || h_.event == nullptr ||
	    ssh_event_add_session(h_.event, s) != SSH_OK)
		throw rpmem::error(ENOMEM, fmt::format("cannot create an SSH channel to {}: {}",
		                                       where_, ssh_get_error(s)));

	callbacks_.userdata = this;
	callbacks_.channel_data_function = on_data;
	callbacks_.channel_eof_function = on_eof;
	callbacks_.channel_close_function = on_close;
	callbacks_.channel_exit_status_function = on_exit_status;
	callbacks_.channel_exit_signal_function = on_exit_signal;
	ssh_callbacks_init(&callbacks_);
	ssh_set_channel_callbacks(h_.channel, &callbacks_);

	// Non-blocking from here: open and exec are retried around our own bounded polls.
	ssh_set_blocking(s, 0);
	deadline until(opts_.connect_timeout);
	auto retry = [&](const char *what, auto op) {
		int rc;
		while ((rc = op()) == SSH_AGAIN && !until.expired())
			ssh_event_dopoll(h_.event, until.poll_ms(100));
		if (rc == SSH_AGAIN)
			throw rpmem::error(ETIMEDOUT, fmt::format("{} on {} took longer than {} ms "
			                                          "(RPMEM_SSH_TIMEOUT)",
			                                          what, where_,
			                                          opts_.connect_timeout.count()));
		if (rc != SSH_OK)
			throw rpmem::error(EPROTO, fmt::format("{} on {} failed: {}", what, where_,
			                                       ssh_get_error(s)));
	};
	retry("opening an SSH session channel",
	      [&] { return ssh_channel_open_session(h_.channel); });
	retry(fmt::format("starting '{}'", command_).c_str(),
	      [&] { return ssh_channel_request_exec(h_.channel, command_.c_str()); });
}

} // namespace rpmem::ssh::detail

namespace rpmem::ssh
{

void end_thread() noexcept
{
	OPENSSL_thread_stop();
}

} // namespace rpmem::ssh
