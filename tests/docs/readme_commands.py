"""Runs the README's commands, as printed, against a live cortexd.

Every fenced block of README.md in `sh` or `python` is run from the
repository root, in order: shell commands with bash (a command may span
lines: a trailing backslash or an open quote continues it), Python blocks
with /usr/bin/python3. `scripts/run` is the server the others talk to: it is
started in the background (its optional `[MODEL.gguf]` left out, so it serves
models/stories260K.gguf) and must become ready. A command passes when it
exits 0 within its time limit and prints no error object. Other fenced
blocks (cpp, mermaid...) are not commands. Skipped, each by name with its
reason: `scripts/setup` (installs system packages) and `scripts/test` (the
suite this test belongs to).

The README's addresses are the defaults (127.0.0.1:8080 and :5555). So that
they are free whatever else runs on the machine, the commands run in a
network namespace of their own (`unshare -rn`, loopback only); where the
machine forbids that, on the host if both ports are free, else the test is
skipped (exit 77).

Usage: /usr/bin/python3 tests/docs/readme_commands.py [--in-netns]
"""

import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SKIP_EXIT = 77  # CTest SKIP_RETURN_CODE
HTTP = "http://127.0.0.1:8080"
PORTS = (8080, 5555)
COMMAND_TIMEOUT_S = 120

# Commands that are not run: prefix -> why.
SKIPPED = {
    "scripts/setup": "installs Debian and npm packages and builds: what the suite's own setup did",
    "scripts/test": "runs the whole suite, this test included",
}


def fenced_blocks(text):
    """(language, body) of each fenced block, in order."""
    return [(m.group(1), m.group(2)) for m in re.finditer(r"^```(\w*)\n(.*?)^```", text, re.M | re.S)]


def shell_commands(block):
    """The block's commands: lines joined while a quote is open or a line ends in a backslash."""
    commands, pending = [], ""
    for line in block.splitlines():
        pending = pending + "\n" + line if pending else line
        if pending.endswith("\\"):
            continue
        try:
            if not shlex.split(pending, comments=True):
                pending = ""
                continue
        except ValueError:  # an open quote: the command goes on
            continue
        commands.append(pending)
        pending = ""
    if pending:
        commands.append(pending)
    return commands


def ports_free():
    for port in PORTS:
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                return False
    return True


def wait_ready(proc, timeout_s=90):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            with urllib.request.urlopen(HTTP + "/health/ready", timeout=1) as r:
                if r.status == 200:
                    return True
        except OSError:
            pass
        time.sleep(0.1)
    return False


def looks_failed(output):
    """An error object in the output: an HTTP error body, a wire error."""
    return re.search(r'"error"\s*:\s*\{|"t"\s*:\s*"error"|\bTraceback \(most recent call last\)', output) is not None


def run(kind, source):
    """Runs one command; returns (ok, output)."""
    if kind == "python":
        argv = ["/usr/bin/python3", "-c", source]
    else:
        argv = ["bash", "-e", "-o", "pipefail", "-c", source]
    try:
        p = subprocess.run(argv, cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=COMMAND_TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        return False, (e.output or b"").decode("utf-8", "replace") + "\n(timed out after %d s)" % COMMAND_TIMEOUT_S
    out = p.stdout.decode("utf-8", "replace")
    if p.returncode != 0:
        return False, out + "\n(exit status %d)" % p.returncode
    return not looks_failed(out), out


def server_command(command):
    """The scripts/run part of a command that starts the server, or None."""
    parts = [c.strip() for c in command.split("&&")]
    for c in parts:
        if c.startswith("scripts/run"):
            return re.sub(r"\s*\[[^\]]*\]", "", c)  # optional arguments as printed: left out
    return None


def main_in_place():
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
        blocks = fenced_blocks(f.read())
    plan = []  # (kind, source)
    server = None
    for lang, body in blocks:
        if lang in ("sh", "bash", "shell"):
            for c in shell_commands(body):
                start = server_command(c)
                if start is not None:
                    for other in (p.strip() for p in c.split("&&")):
                        if not other.startswith("scripts/run"):
                            plan.append(("skip", other))
                    server = server or start
                else:
                    plan.append(("sh", c))
        elif lang == "python":
            plan.append(("python", body))
    if server is None:
        print("readme: no `scripts/run` command in README.md: nothing serves the examples", file=sys.stderr)
        return 1

    log_path = os.path.join(os.environ.get("TMPDIR", "/tmp"), "readme_commands_cortexd.%d.log" % os.getpid())
    log = open(log_path, "w+b")
    proc = subprocess.Popen(["bash", "-c", "exec " + server], cwd=REPO, stdin=subprocess.DEVNULL,
                            stdout=log, stderr=log)
    failures = 0
    try:
        if not wait_ready(proc):
            log.seek(0)
            print("readme: `%s` did not become ready; its log:\n%s" % (server, log.read().decode("utf-8", "replace")),
                  file=sys.stderr)
            return 1
        print("readme: started `%s`" % server)
        for kind, source in plan:
            shown = source if kind != "python" else "python block: " + source.strip().splitlines()[-1].strip()
            if kind == "skip" or any(source.startswith(p) for p in SKIPPED):
                prefix = next((p for p in SKIPPED if source.startswith(p)), source)
                print("readme: SKIP %s (%s)" % (source, SKIPPED.get(prefix, "not a command")))
                continue
            ok, out = run(kind, source)
            print("readme: %s %s" % ("ok  " if ok else "FAIL", shown))
            if not ok:
                failures += 1
                print(out[-4000:])
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = proc.wait()
        log.close()
        os.unlink(log_path)
    if code != 0:
        print("readme: the server exited with %s after SIGTERM (expected 0: drained)" % code, file=sys.stderr)
        failures += 1
    print("readme: %d command(s) failed" % failures if failures else "readme: all commands passed")
    return 1 if failures else 0


def main():
    if not os.access(os.path.join(REPO, "build", "bin", "cortexd"), os.X_OK):
        print("readme: SKIP: build/bin/cortexd is missing (the README's commands run build/bin)")
        return SKIP_EXIT
    bin_dir = os.environ.get("CORTEX_BIN_DIR")
    if bin_dir and os.path.realpath(bin_dir) != os.path.realpath(os.path.join(REPO, "build", "bin")):
        print("readme: SKIP: this build is %s; the README's commands run build/bin" % bin_dir)
        return SKIP_EXIT
    if "--in-netns" in sys.argv:
        subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
        return main_in_place()
    try:
        probe = subprocess.run(["unshare", "-rn", "true"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        netns = probe.returncode == 0 and subprocess.run(
            ["unshare", "-rn", "sh", "-c", "ip link set lo up"], stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL).returncode == 0
    except OSError:
        netns = False
    if netns:
        return subprocess.run(["unshare", "-rn", sys.executable, os.path.abspath(__file__), "--in-netns"]).returncode
    if ports_free():
        print("readme: no network namespace here; running on the host's 127.0.0.1:8080 and :5555")
        return main_in_place()
    print("readme: SKIP: no network namespace here, and 127.0.0.1:8080 or :5555 is taken")
    return SKIP_EXIT


if __name__ == "__main__":
    sys.exit(main())
