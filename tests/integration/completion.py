#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The bash completion of rpmem and rpmemd (packaging/bash-completion/), as installed and as
Debian's bash-completion loads it, checked against the programs' own --help so that the two
cannot drift apart:

  * `cmake --install` puts both files in share/bash-completion/completions/, and
    bash-completion's loader (XDG_DATA_DIRS pointing there) finds and loads each one;
  * `rpmem <TAB>` offers exactly the commands `rpmem --help` lists (and help);
    `rpmem COMMAND -<TAB>` exactly the options `rpmem help COMMAND` lists (`rpmem bench`:
    rpmem-bench's), `rpmemd -<TAB>` exactly rpmemd's;
  * after an option that takes a value, the values offered are the ones its help names
    (all of them where the help lists choices as {a,b} or <a|b>), and never options; after
    one that takes none, the options again; file and directory arguments complete names.

Usage: completion.py SOURCE_DIR BUILD_DIR. Prints what disagrees and exits 1, or a summary.
"""
import os
import re
import subprocess
import sys
import tempfile

src, build = sys.argv[1], sys.argv[2]
problems = []
bash_completion = "/usr/share/bash-completion/bash_completion"


def output(*args):
    r = subprocess.run(args, capture_output=True, text=True)
    return r.stdout + r.stderr


def cli11_help(text):
    """{option: description} of a CLI11 help's Options section, and the set that take a value
    (a type follows their names: `--size TEXT`)."""
    options, valued, section, last = {}, set(), None, None
    for line in text.splitlines():
        if line and not line.startswith(" "):
            section = line.rstrip(":")
            continue
        if section != "Options":
            continue
        m = re.match(r"^  (-[^ ]+)(?: (\S.*?))?(?:\s{2,}(.*))?$", line)
        if m:
            last = m.group(1).split(",")
            for name in last:
                options[name] = (m.group(2) or "") + " " + (m.group(3) or "")
                if m.group(2) and re.match(r"[A-Z]", m.group(2)):
                    valued.add(name)
        elif last:
            for name in last:
                options[name] += " " + line.strip()
    return options, valued


def getopt_help(text):
    """The same for rpmemd's help: `  -c, --config <path>  text` and `      --wait <mode>`."""
    options, valued, last = {}, set(), None
    for line in text.splitlines():
        m = re.match(r"^\s+(-\w, )?(--[\w-]+)( <[^>]+>)?(.*)$", line)
        if m:
            last = [n for n in ((m.group(1) or "").strip(" ,"), m.group(2)) if n]
            for name in last:
                options[name] = (m.group(3) or "") + m.group(4)
                if m.group(3):
                    valued.add(name)
        elif last and line.startswith("     "):
            for name in last:
                options[name] += " " + line.strip()
        else:
            last = None
    return options, valued


def subcommands(text):
    out, section = [], None
    for line in text.splitlines():
        if line and not line.startswith(" "):
            section = line.rstrip(":")
        elif section == "Subcommands" and re.match(r"^  \S", line):
            out.append(line.split()[0])
    return out


root = tempfile.mkdtemp(prefix="rpmem-completion-")
prefix = os.path.join(root, "usr")
for component in ("tools", "daemon"):
    r = subprocess.run(["cmake", "--install", build, "--prefix", prefix, "--component",
                        component], capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"completion.py: cmake --install --component {component} failed:\n"
                 f"{r.stdout}{r.stderr}")
completions = os.path.join(prefix, "share", "bash-completion", "completions")
for name in ("rpmem", "rpmemd"):
    if not os.path.isfile(os.path.join(completions, name)):
        problems.append(f"cmake --install put no {name} in {completions}")

# A working directory with one file and one directory, for file name completions.
work = os.path.join(root, "work")
os.makedirs(os.path.join(work, "subdir"))
open(os.path.join(work, "file.set"), "w").close()

# What to complete: (program, words so far); the results are read back in this order.
queries = []


def ask(line):
    queries.append(line)
    return len(queries) - 1


rpmem = os.path.join(build, "bin", "rpmem")
commands = subcommands(output(rpmem, "--help"))
helps = {c: cli11_help(output(rpmem, "help", c)) for c in commands if c != "bench"}
helps["bench"] = cli11_help(output(os.path.join(build, "bin", "rpmem-bench"), "--help"))
rpmemd_help = getopt_help(output(os.path.join(build, "bin", "rpmemd"), "--help"))
if not commands or not rpmemd_help[0] or any(not h[0] for h in helps.values()):
    sys.exit("completion.py: a help text did not parse: the programs' --help changed format")

top = {"commands": ask("rpmem "), "global": ask("rpmem -"), "sy": ask("rpmem sy"),
       "help": ask("rpmem help "), "rpmemd": ask("rpmemd -"),
       "files": ask("rpmem verify "), "dirs": ask("rpmem top --dir "),
       "after value": ask("rpmem top --sort state -"), "after flag": ask("rpmem sync --full -"),
       "target": ask("rpmem info local"), "desc": ask("rpmem info localhost ")}
per_command = {c: ask(f"rpmem {c} -") for c in commands}
values = {(c, o): ask(f"rpmem {c} {o} ") for c, (opts, valued) in helps.items() for o in valued}
values.update({("rpmemd", o): ask(f"rpmemd {o} ") for o in rpmemd_help[1]})
# After each option, a word starting with '-': a value (nothing offered) or, after an option
# that takes none, the options again.
dashed = {(c, o): ask(f"rpmem {c} {o} -") for c, (opts, _) in helps.items() for o in opts}
dashed.update({("rpmemd", o): ask(f"rpmemd {o} -") for o in rpmemd_help[0]})

script = [f"cd '{work}'",
          f"export XDG_DATA_DIRS='{os.path.join(prefix, 'share')}'",
          "export BASH_COMPLETION_USER_DIR=/nonexistent",
          f". {bash_completion}",
          "for c in rpmem rpmemd; do __load_completion $c || echo \"### not loaded: $c\"; done",
          "complete -p rpmem rpmemd",
          r"""ask() {
  local line=$1
  read -ra COMP_WORDS <<<"$line"
  [[ $line == *' ' ]] && COMP_WORDS+=('')
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1)) COMP_LINE=$line COMP_POINT=${#line} COMPREPLY=()
  local f; f=$(complete -p "${COMP_WORDS[0]}" | sed 's/.*-F \([^ ]*\) .*/\1/')
  "$f" "${COMP_WORDS[0]}" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
  echo "### $line"
  printf '%s\n' "${COMPREPLY[@]}"
}"""]
script += [f"ask '{q}'" for q in queries]
r = subprocess.run(["bash", "--norc", "--noprofile", "-c", "\n".join(script)],
                   capture_output=True, text=True)
if r.returncode or "### not loaded" in r.stdout:
    sys.exit(f"completion.py: bash failed or bash-completion did not load a file:\n{r.stdout}"
             f"{r.stderr}")
if "complete -F _rpmem rpmem" not in r.stdout or "complete -F _rpmemd rpmemd" not in r.stdout:
    problems.append(f"bash-completion loaded the files but `complete -p` says:\n{r.stdout}")
answers = []
for block in r.stdout.split("### ")[1:]:
    answers.append(set(w for w in block.split("\n")[1:] if w))
if len(answers) != len(queries):
    sys.exit(f"completion.py: {len(answers)} answers to {len(queries)} questions:\n{r.stdout}")


def expect(query, got, want):
    if got != want:
        problems.append(f"`{queries[query]}<TAB>` offers {sorted(got)}; --help says "
                        f"{sorted(want)} (missing {sorted(want - got)}, extra "
                        f"{sorted(got - want)})")


expect(top["commands"], answers[top["commands"]], set(commands) | {"help"})
expect(top["global"], answers[top["global"]], {"-h", "--help", "--version"})
expect(top["sy"], answers[top["sy"]], {"sync"})
expect(top["help"], answers[top["help"]], set(commands))
expect(top["rpmemd"], answers[top["rpmemd"]], set(rpmemd_help[0]))
expect(top["files"], answers[top["files"]], {"file.set", "subdir"})
expect(top["dirs"], answers[top["dirs"]], {"subdir"})
expect(top["after value"], answers[top["after value"]], set(helps["top"][0]))
expect(top["after flag"], answers[top["after flag"]], set(helps["sync"][0]))
if "localhost" not in answers[top["target"]]:
    problems.append(f"`rpmem info local<TAB>` offers {sorted(answers[top['target']])}, "
                    "not localhost (a target is a host name)")
expect(top["desc"], answers[top["desc"]], set())  # a name on the replica node
for c, q in per_command.items():
    expect(q, answers[q], set(helps[c][0]))

# Values: a choice list the help gives in braces is offered whole; every word offered is one
# the option's help names; file names only where files are asked for.
names = {"file.set", "subdir"}
for (c, o), q in values.items():
    got = answers[q]
    text = (rpmemd_help if c == "rpmemd" else helps[c])[0][o]
    braces = re.search(r"\{([^}]*)\}", text)
    if braces:
        expect(q, got, set(braces.group(1).split(",")))
    elif got and not got <= names:
        for word in got - names:
            if not re.search(r"\b" + re.escape(word) + r"\b", text):
                problems.append(f"`{queries[q]}<TAB>` offers {word}, which the help of {o} "
                                f"does not name: {text.strip()}")
    angle = re.search(r"<(\w+\|[\w|]+)>", text)
    if angle:
        expect(q, got, set(angle.group(1).split("|")))

for (c, o), q in dashed.items():
    opts, valued = rpmemd_help if c == "rpmemd" else helps[c]
    expect(q, answers[q], set() if o in valued else set(opts))

subprocess.run(["rm", "-rf", root])
if problems:
    print("\n".join(problems))
    sys.exit(1)
print(f"completion: {len(queries)} completions agree with the --help of rpmem ({len(commands)} "
      f"commands), rpmem-bench and rpmemd; both files load from share/bash-completion")
