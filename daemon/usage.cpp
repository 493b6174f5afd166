// SPDX-License-Identifier: BSD-3-Clause
// rpmemd's --help and --version texts.
#include "config.hpp"

#include <fmt/format.h>

namespace rpmemd
{

// One text, as --help prints it: longer than a function should be, and clearer whole.
std::string usage(std::string_view program)
{
	return fmt::format(
	    "usage: {} [options]\n"
	    "\n"
	    "Target daemon of rpmem: started over ssh by the client, one pool per process;\n"
	    "the control protocol runs on stdin/stdout.\n"
	    "\n"
	    "Options:\n"
	    "  -c, --config <path>       read only this config file (it must exist)\n"
	    "  -h, --help                print this help and exit\n"
	    "  -V, --version             print the version and exit\n"
	    "      --check-config        read the command line and config files as a\n"
	    "                            session would, print every key's value and exit\n"
	    "                            (0: valid; 255: not, and why)\n"
	    "  -r, --remove <poolset>    remove pool set <poolset> (relative to poolset-dir)\n"
	    "                            and exit\n"
	    "  -f, --force               with --remove: ignore errors\n"
	    "  -s, --pool-set            with --remove: also remove the pool set file\n"
	    "  -t, --nthreads <num>      worker threads, 0 to {} (default 0: automatic)\n"
	    "      --log-file <path>     log to this file instead of syslog\n"
	    "                            (default /var/log/rpmemd.log)\n"
	    "      --poolset-dir <path>  directory of pool set descriptors (default $HOME)\n"
	    "      --persist-apm         offer the Appliance Persistency Method where it is\n"
	    "                            durable: the pool on pmem, and a platform that\n"
	    "                            flushes its caches on power loss (eADR, from\n"
	    "                            libpmem) or, on verbs, --nic-writes-durable\n"
	    "      --nic-writes-durable  assert that this host's RDMA NIC writes are durable\n"
	    "                            once complete (DDIO off, or eADR); never checked\n"
	    "      --persist-general     use the General Purpose Server Persistency Method\n"
	    "      --use-syslog          log to syslog (the default)\n"
	    "      --log-level <level>   err, warn, notice, info or debug (default notice)\n"
	    "      --heartbeat-timeout <ms>\n"
	    "                            give up on a silent client after <ms> milliseconds\n"
	    "                            (1 to {}, default 5000)\n"
	    "      --wait <mode>         how workers wait for requests: adaptive (poll while\n"
	    "                            it pays and a core is free, then block; default),\n"
	    "                            block or spin\n"
	    "      --persist-commit      offer the commit-complete persist where the provider\n"
	    "                            grants FI_RMA_PMEM and the pool is on real pmem\n"
	    "      --mr-mode <mode>      memory registration mode asked of the provider:\n"
	    "                            auto (default; or RPMEM_MR_MODE), basic or scalable\n"
	    "      --auth-timeout <ms>   close a connection to the fabric port that has not\n"
	    "                            sent its connection request within <ms> (10 to {},\n"
	    "                            default 1000)\n"
	    "      --block-checksums <yes|no>\n"
	    "                            answer clients' block checksum requests (delta\n"
	    "                            resync; default yes; no: clients copy whole pools)\n"
	    "      --port-range <first-last>\n"
	    "                            the ports the fabric listener may take (one port\n"
	    "                            per session setting up at once; default: an\n"
	    "                            ephemeral port)\n"
	    "      --status-dir <path>   where sessions record what they serve for `rpmem\n"
	    "                            status` (default /run/user/UID/rpmemd, else\n"
	    "                            /tmp/rpmemd-UID; none: no records)\n"
	    "      --resident <seconds>  keep a resident rpmemd that starts later sessions of\n"
	    "                            this user and configuration fast, until <seconds>\n"
	    "                            after the last one ended (1 to {}; also yes: {},\n"
	    "                            or no: none, the default)\n"
	    "\n"
	    "Config files: /etc/rpmemd/rpmemd.conf, then ~/.rpmemd.conf (or only --config).\n"
	    "One 'key = value' per line, '#' starts a comment, booleans are yes or no.\n"
	    "Keys: log-file, poolset-dir, persist-apm, persist-general, use-syslog,\n"
	    "log-level, heartbeat-timeout, wait, persist-commit, mr-mode, auth-timeout,\n"
	    "block-checksums, status-dir, nic-writes-durable, port-range, resident.\n"
	    "Command-line options override config files.\n",
	    program, max_nthreads, max_heartbeat_ms, max_auth_timeout_ms, max_resident_s,
	    default_resident_s);
}

std::string version_string()
{
	return "rpmemd version " RPMEMD_VERSION;
}

} // namespace rpmemd
