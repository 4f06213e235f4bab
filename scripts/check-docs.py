#!/usr/bin/env python3
"""Checks that the user documentation (README.md and docs/*.md) names only
what exists: every HTTP route it names is one the coordinator serves
(src/api/*.cc), every `idlegrid ...` command in its code is a subcommand the
binary has (asked through each level's --help), and every relative link
points to a file in this repository. No doc may point outside the
repository. Prints each problem as FILE:LINE and exits 1; else one summary
line. ctest: docs_references.

usage: check-docs.py [PATH/TO/idlegrid]   (default: build/idlegrid)
"""
import glob
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Named by docs while others add them: passed over (and counted as pending)
# only while the code or the file does not have them yet.
PENDING_ROUTES = {"/healthz", "/readyz"}
PENDING_COMMANDS = {("login",), ("backup",)}
PENDING_FILES = {
    "docs/getting-started-researcher.md",
    "docs/getting-started-provider.md",
    "docs/getting-started-operator.md",
    "docs/operations.md",
    "docs/packaging.md",
}

METHODS = ("GET", "POST", "PUT", "DELETE", "PATCH", "HEAD")


def doc_files():
    files = [os.path.join(ROOT, "README.md")]
    files += sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
    return [f for f in files if os.path.isfile(f)]


def rel(path):
    return os.path.relpath(path, ROOT)


# --- what the code serves -----------------------------------------------------

ROUTE_CALL = re.compile(
    r'\b(?:server_?\s*->|server\s*\.)\s*(Get|Post|Put|Delete|Patch|Head)\(\s*(?:R"\((.*?)\)"|"([^"]*)")', re.S
)
# src/api/dashboard.cc's asset table: {"/path", "content/type", ...}.
ASSET_ROW = re.compile(r'\{\s*"(/[^"]*)"\s*,\s*"[a-z]+/[^"]*"')


def routes_in_code():
    """(METHOD, path regex) for every route a src/api/*.cc file registers."""
    routes = set()
    for path in sorted(glob.glob(os.path.join(ROOT, "src", "api", "*.cc"))):
        text = open(path, encoding="utf-8").read()
        for method, raw, plain in ROUTE_CALL.findall(text):
            routes.add((method.upper(), raw or plain))
        if "ServeDashboard" in text:
            for asset in ASSET_ROW.findall(text):
                routes.add(("GET", asset))
    return routes


# --- markdown: code and lines -------------------------------------------------

FENCE = re.compile(r"^\s*(```|~~~)")


def split_markdown(text):
    """(code chunks, prose chunks): lists of (first line number, text). A
    fenced block gives one chunk per line; an inline code span one chunk (it
    may run over line breaks, which it keeps); prose is the rest of each
    paragraph. line_of() turns an offset in a chunk into a line number."""
    code, prose = [], []
    lines = text.split("\n")
    in_fence = False
    outside = []  # (line number, line) outside fences
    for number, line in enumerate(lines, 1):
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence:
            code.append((number, line))
        else:
            outside.append((number, line))
    # Inline spans, a paragraph at a time so that a span may wrap.
    paragraph = []

    def flush():
        if not paragraph:
            return
        joined = "\n".join(line for _, line in paragraph)
        starts = []
        offset = 0
        for number, line in paragraph:
            starts.append((offset, number))
            offset += len(line) + 1

        def line_at(pos):
            found = paragraph[0][0]
            for start, number in starts:
                if start <= pos:
                    found = number
            return found

        last = 0
        for m in re.finditer(r"(`+)(.+?)\1", joined, re.S):
            code.append((line_at(m.start(2)), m.group(2)))
            prose.append((line_at(last), joined[last:m.start()]))
            last = m.end()
        prose.append((line_at(last), joined[last:]))
        paragraph.clear()

    for number, line in outside:
        if line.strip():
            paragraph.append((number, line))
        else:
            flush()
    flush()
    return code, prose


# --- routes named by the docs --------------------------------------------------

DOC_ROUTE = re.compile(
    r"(?:\b(?P<method>" + "|".join(METHODS) + r")\s+)?"
    r"(?:https?://[^/\s`'\"]+|(?<![\w.-]))"
    r"(?P<path>/v\d+/[^\s`'\"),;<>|]*|/(?:metrics|healthz|readyz)(?![\w/-]|\.\w))"
)
PLACEHOLDER = re.compile(r"^(\{\w+\}|:\w+|<[^>]+>|[A-Z][A-Z0-9_]*|\.\.\.|…)$")


def clean_doc_path(path):
    path = re.split(r"[?#\[]", path, maxsplit=1)[0]
    return path.rstrip(".:,;)")


def segment_matches(doc_seg, code_seg):
    group = re.fullmatch(r"\((.*)\)", code_seg)
    if PLACEHOLDER.match(doc_seg):
        return group is not None
    if group:
        return re.fullmatch(group.group(1), doc_seg) is not None
    return doc_seg == code_seg


def route_served(method, doc_path, routes):
    doc_segs = doc_path.split("/")
    for code_method, code_path in routes:
        if method and method != code_method:
            continue
        # The path regexes put a group around each parameter; a group's
        # own slashes (none today) would need a real regex walk.
        code_segs = re.split(r"/(?![^()]*\))", code_path)
        if len(code_segs) == len(doc_segs) and all(map(segment_matches, doc_segs, code_segs)):
            return True
    return False


def line_of(chunk_line, text, offset):
    return chunk_line + text.count("\n", 0, offset)


def check_routes(path, chunks, routes, problems, pending):
    checked = 0
    for chunk_line, text in chunks:
        for m in DOC_ROUTE.finditer(text):
            number = line_of(chunk_line, text, m.start("path"))
            doc_path = clean_doc_path(m.group("path"))
            if not doc_path or doc_path.endswith("/"):
                continue
            method = m.group("method")
            checked += 1
            if route_served(method, doc_path, routes):
                continue
            if doc_path in PENDING_ROUTES:
                pending.add(f"route {doc_path}")
                continue
            named = f"{method} {doc_path}" if method else doc_path
            problems.append(f"{rel(path)}:{number}: route `{named}` is not served by src/api/*.cc")
    return checked


# --- `idlegrid ...` commands named by the docs ---------------------------------

COMMAND = re.compile(r"(?<![\w.-])idlegrid(?![\w./-])")
SUBCOMMAND_WORD = re.compile(r"^[a-z]+(?:-[a-z]+)*$")
STOP_TOKENS = {"&&", "||", "|", ";", "&", ">", ">>", "<", "\\", "#"}
# `sudo -u idlegrid ...`, `useradd idlegrid`: the user, not the binary.
USER_CONTEXT = {"-u", "--user", "useradd", "adduser", "userdel", "su", "enable-linger", "chown", "-g", "--group"}


class Cli:
    def __init__(self, binary):
        self.binary = binary
        self.cache = {}

    def subcommands(self, words):
        """The subcommands `BINARY words... --help` lists, or an error."""
        key = tuple(words)
        if key not in self.cache:
            try:
                run = subprocess.run(
                    [self.binary, *words, "--help"], capture_output=True, text=True, timeout=30
                )
                out = run.stdout + run.stderr
                if run.returncode != 0:
                    self.cache[key] = (None, f"`--help` exited {run.returncode}: {out.strip()[:200]}")
                else:
                    self.cache[key] = (parse_subcommands(out), None)
            except (OSError, subprocess.TimeoutExpired) as e:
                self.cache[key] = (None, f"cannot run {self.binary}: {e}")
        return self.cache[key]


def parse_subcommands(help_text):
    names = set()
    in_section = False
    for line in help_text.split("\n"):
        if re.match(r"^(Subcommands|SUBCOMMANDS):\s*$", line):
            in_section = True
            continue
        if in_section:
            if line and not line.startswith(" "):
                in_section = False
                continue
            m = re.match(r"^  ([A-Za-z0-9][\w-]*)(\s|$)", line)
            if m:
                names.add(m.group(1))
    return names


def command_words(rest):
    """The words after `idlegrid`, up to the end of the command."""
    words = []
    for token in rest.split():
        if token in STOP_TOKENS or token.startswith("#"):
            break
        stripped = token.rstrip("),;:.")
        if stripped:
            words.append(stripped)
        if stripped != token:
            break
    return words


def check_command(words, cli):
    """(problem, pending command) for `idlegrid words...`: each word is a
    subcommand of the level before it until a level has none (the rest are
    its arguments) or a word is plainly an argument. Both None: it exists."""
    level = []
    for word in words:
        subs, error = cli.subcommands(level)
        if error:
            return f"`idlegrid {' '.join(level)}`: {error}", None
        if not subs:
            return None, None  # the rest are this command's arguments
        alternatives = word.split("|")
        if all(a in subs for a in alternatives):
            if len(alternatives) > 1:
                return None, None  # `ledger balance|history`: each one exists
            level.append(word)
            continue
        if not all(SUBCOMMAND_WORD.match(a) for a in alternatives):
            return None, None  # an argument: JOB, a path, a flag, a number
        missing = [a for a in alternatives if a not in subs]
        if tuple(level + missing[:1]) in PENDING_COMMANDS:
            return None, "command idlegrid " + " ".join(level + missing[:1])
        where = f"`idlegrid {' '.join(level)}`" if level else "`idlegrid`"
        return (
            f"`idlegrid {' '.join(level + [word])}`: {missing[0]} is not a subcommand of {where} "
            f"(it has: {', '.join(sorted(subs))})",
            None,
        )
    _, error = cli.subcommands(level)
    if error:
        return f"`idlegrid {' '.join(level)}`: {error}", None
    return None, None


def check_commands(path, chunks, cli, problems, pending):
    checked = 0
    for chunk_line, text in chunks:
        for m in COMMAND.finditer(text):
            number = line_of(chunk_line, text, m.start())
            before = text[: m.start()].split()
            if before and before[-1].rsplit("/", 1)[-1] in USER_CONTEXT:
                continue
            words = command_words(text[m.end():])
            if not words:
                continue
            checked += 1
            problem, pending_name = check_command(words, cli)
            if pending_name:
                pending.add(pending_name)
            elif problem:
                problems.append(f"{rel(path)}:{number}: {problem}")
    return checked


# --- links and paths -----------------------------------------------------------

LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
OUTSIDE = re.compile(r"(?<![\w.])(\.\./shared\b|/work/[^\s`'\")\]]*|\.\./\.\./[^\s`'\")\]]*)")


def check_links(path, text, problems, pending):
    checked = 0
    here = os.path.dirname(path)
    for number, line in enumerate(text.split("\n"), 1):
        for target in LINK.findall(line):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                continue  # https:, mailto:, an anchor on this page
            checked += 1
            file_part = target.split("#", 1)[0]
            resolved = os.path.normpath(os.path.join(ROOT if file_part.startswith("/") else here,
                                                     file_part.lstrip("/")))
            inside = os.path.relpath(resolved, ROOT)
            if inside.startswith(".."):
                problems.append(f"{rel(path)}:{number}: link `{target}` leaves the repository")
            elif not os.path.exists(resolved):
                if inside in PENDING_FILES:
                    pending.add(f"file {inside}")
                else:
                    problems.append(f"{rel(path)}:{number}: link `{target}` names no file ({inside})")
        for outside in OUTSIDE.findall(line):
            outside = outside.rstrip(".,:;")
            problems.append(f"{rel(path)}:{number}: `{outside}` is outside the repository")
    return checked


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "idlegrid")
    problems = []
    pending = set()
    routes = routes_in_code()
    if not routes:
        problems.append("src/api/*.cc: no route found: the pattern no longer matches the code")
    cli = Cli(binary)
    _, error = cli.subcommands([])
    if error:
        problems.append(f"{binary}: {error}")
    counts = {"routes": 0, "commands": 0, "links": 0}
    files = doc_files()
    for path in files:
        text = open(path, encoding="utf-8").read()
        code, prose = split_markdown(text)
        counts["routes"] += check_routes(path, code + prose, routes, problems, pending)
        if not error:
            counts["commands"] += check_commands(path, code, cli, problems, pending)
        counts["links"] += check_links(path, text, problems, pending)
    def where(problem):
        name, _, rest = problem.partition(":")
        line = rest.partition(":")[0]
        return (name, int(line) if line.isdigit() else 0)

    for p in sorted(problems, key=where):
        print(p)
    if problems:
        print(f"check-docs: {len(problems)} problem(s)")
        return 1
    note = f"; pending (being added): {', '.join(sorted(pending))}" if pending else ""
    print(
        f"check-docs: {len(files)} files: {counts['routes']} route mentions against {len(routes)} served routes, "
        f"{counts['commands']} idlegrid commands, {counts['links']} relative links, all found{note}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
