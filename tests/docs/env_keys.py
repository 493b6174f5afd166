#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Checks that the environment variables and rpmemd's options and config keys the code reads
are the ones its manual pages document, both ways, so that the two cannot drift apart.

  * every "RPMEM_*" string literal in lib/, tools/ and bench/ (the variables librpmem and the
    tools read) is named in librpmem(7)'s ENVIRONMENT section, and every RPMEM_* variable a
    tag of that section names is such a literal;
  * every long option of rpmemd (daemon/config_cmdline.cpp) is a tag of rpmemd(1)'s OPTIONS
    section, and every option a tag there names is one;
  * the config keys (daemon/config_settings.hpp) are exactly the keys rpmemd(1)'s FILES section
    lists, and exactly those of packaging/rpmemd.conf;
  * every variable rpmemd reads (getenv in daemon/) is a tag of rpmemd(1)'s ENVIRONMENT section,
    and the reverse.

Usage: env_keys.py SOURCE_DIR. Prints what disagrees and exits 1, or a summary and exits 0.
"""
import pathlib
import re
import sys

src = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
problems = []


def sources(*dirs):
    for d in dirs:
        for p in sorted((src / d).rglob("*")):
            if p.suffix in (".cpp", ".hpp", ".h", ".c") and p.is_file():
                yield p, p.read_text(errors="replace")


def section(page, name):
    """The text of a man page's .SH section."""
    text = (src / "docs/man" / page).read_text()
    m = re.search(r"^\.SH " + name + r"\n(.*?)(?=^\.SH |\Z)", text, re.S | re.M)
    if not m:
        problems.append(f"docs/man/{page} has no .SH {name} section (moved? move this check)")
        return ""
    return m.group(1)


def tags(text):
    """The lines right after each .TP: the tags of a list of definitions."""
    return re.findall(r"^\.T[PQ]\n(.*)$", text, re.M)


def roff_plain(line):
    return line.replace("\\-", "-").replace('"', "")


def compare(what, code, docs, code_where, docs_where):
    for name in sorted(code - docs):
        problems.append(f"{what} {name}: read by {code_where}, not documented in {docs_where}")
    for name in sorted(docs - code):
        problems.append(f"{what} {name}: documented in {docs_where}, not read by {code_where}")


# librpmem(7) and the RPMEM_* variables.
read = set()
for path, text in sources("lib", "tools", "bench"):
    read |= set(re.findall(r'"(RPMEM_[A-Z0-9_]+)"', text))
env7 = section("librpmem.7", "ENVIRONMENT")
named = set(re.findall(r"\bRPMEM_[A-Z0-9_]+", env7))
tagged = {v for t in tags(env7) for v in re.findall(r"\bRPMEM_[A-Z0-9_]+", t)}
compare("variable", read, named, "lib/, tools/ or bench/", "librpmem(7) ENVIRONMENT")
compare("variable", read, tagged | (read & named), "lib/, tools/ or bench/",
        "librpmem(7) ENVIRONMENT (as a .TP tag)")

# rpmemd's long options and rpmemd(1)'s OPTIONS.
cmdline = (src / "daemon/config_cmdline.cpp").read_text()
m = re.search(r"long_options\[\] = \{(.*?)\n\};", cmdline, re.S)
options = set(re.findall(r'\{"([a-z-]+)",', m.group(1))) if m else set()
if not options:
    problems.append("daemon/config_cmdline.cpp: no long_options[] found (moved? move this check)")
opts1 = section("rpmemd.1", "OPTIONS")
documented = {o for t in tags(opts1) for o in re.findall(r"--([a-z][a-z-]*)", roff_plain(t))}
compare("option --", {o for o in options}, documented, "rpmemd (config_cmdline.cpp)",
        "rpmemd(1) OPTIONS")

# Config keys: the settings table, rpmemd(1)'s FILES list and packaging/rpmemd.conf.
table = (src / "daemon/config_settings.hpp").read_text()
keys = set(re.findall(r'\{setting::[a-z_]+, "([a-z-]+)"\}', table))
if not keys:
    problems.append("daemon/config_settings.hpp: no settings table found (moved? move this check)")
files1 = roff_plain(section("rpmemd.1", "FILES"))
m = re.search(r"The keys are the long names of the options that configure sessions:\n(.*?)\.\n",
              files1, re.S)
if m:
    listed = set(re.findall(r"[a-z][a-z-]+", re.sub(r"^\.BR? ", "", m.group(1), flags=re.M)))
    compare("config key", keys, listed, "rpmemd (config_settings.hpp)",
            "rpmemd(1) FILES (the list of keys)")
else:
    problems.append("rpmemd(1) FILES does not list the config keys ('The keys are the long "
                    "names of the options that configure sessions:')")
for key in sorted(keys - options):
    problems.append(f"config key {key}: no command-line option --{key} (config_cmdline.cpp)")
conf = (src / "packaging/rpmemd.conf").read_text()
compare("config key", keys, set(re.findall(r"^#?([a-z][a-z-]+) = ", conf, re.M)),
        "rpmemd (config_settings.hpp)", "packaging/rpmemd.conf")

# rpmemd's environment.
daemon_env = set()
for path, text in sources("daemon"):
    daemon_env |= set(re.findall(r'getenv\("([A-Z0-9_]+)"\)', text))
env1 = {v for t in tags(section("rpmemd.1", "ENVIRONMENT")) for v in re.findall(r"[A-Z][A-Z0-9_]+", t)}
compare("variable", daemon_env, env1, "rpmemd (getenv in daemon/)", "rpmemd(1) ENVIRONMENT")

if problems:
    print("\n".join(problems))
    sys.exit(1)
print(f"{len(read)} RPMEM_* variables, {len(options)} rpmemd options, {len(keys)} config keys "
      f"and {len(daemon_env)} rpmemd variables: code and manual pages agree")
