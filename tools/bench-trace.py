#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The host half of BENCH_TRACE=1 make bench: exact instruction counts of the drivers' own
code per message.

QEMU runs the bench VM with `-d nochain` and `-dfilter` on the module area, and logs a line
for every translated block it executes there while `-d exec` is on. The guest asks for it
to be switched on and off around each run (files ctl.N in the shared directory); `watch`
does the switching through QEMU's monitor and acknowledges (ack.N). `report` then counts,
for each run, the blocks executed in each driver's module and the instructions in them
(from `objdump -d` of the module: a block runs from where it starts to its first jump,
call or return, or to where a block logged in either run of the row starts), and prints
per row and driver the difference between the long and the short run per message, by
function.

    bench-trace.py watch DIR MONITOR_SOCKET
    bench-trace.py report DIR
"""
import collections
import os
import re
import socket
import subprocess
import sys
import time


def prompt(sock):
    """Reads up to the monitor's next prompt; False if the monitor went away first."""
    buf = b""
    while not buf.endswith(b"(qemu) "):
        chunk = sock.recv(4096)
        if not chunk:
            return False
        buf += chunk
    return True


def hmp(sock, cmd):
    """Sends one monitor command and waits for it to be done."""
    sock.sendall(cmd.encode() + b"\n")
    if not prompt(sock):
        raise OSError("the QEMU monitor went away")


def watch(d, path):
    """Serves the guest's requests until the VM goes away."""
    sock = None
    for _ in range(600):
        try:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.connect(path)
            break
        except OSError:
            sock = None
            time.sleep(0.5)
    if sock is None:
        sys.exit(f"bench-trace: no QEMU monitor at {path}")
    if not prompt(sock):
        return
    # tools/bench ends this process once the VM is gone.
    seq = 1
    while True:
        ctl = os.path.join(d, f"ctl.{seq}")
        if not os.path.exists(ctl):
            time.sleep(0.05)
            continue
        with open(ctl) as f:
            words = f.read().split()
        try:
            if words[:1] == ["on"] and len(words) == 2:
                hmp(sock, "logfile " + os.path.join(d, words[1]))
                hmp(sock, "log exec,nochain")
            else:
                hmp(sock, "log nochain")
                # Closes the file: the run's log is complete when acknowledged.
                hmp(sock, "logfile " + os.path.join(d, "qemu-idle.log"))
        except OSError:
            return
        open(os.path.join(d, f"ack.{seq}"), "w").close()
        seq += 1


ENDS = re.compile(r"^(j\w*|call\w*|ret\w*|iret\w*|lret\w*|sysret\w*|syscall|ud2|int3|hlt)$")


def disassemble(ko):
    """Per section: sorted instruction offsets, whether each ends a block, and the
    symbols (offset, name)."""
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", ko], check=True,
                         capture_output=True, text=True).stdout
    secs = {}
    sec = None
    for line in out.splitlines():
        m = re.match(r"^Disassembly of section (\S+):", line)
        if m:
            sec = secs.setdefault(m.group(1), {"insn": [], "syms": []})
            continue
        if sec is None:
            continue
        m = re.match(r"^([0-9a-f]+) <(.+)>:$", line)
        if m:
            sec["syms"].append((int(m.group(1), 16), m.group(2)))
            continue
        m = re.match(r"^\s+([0-9a-f]+):\s+(\S+)", line)
        if m:
            mnem = m.group(2)
            sec["insn"].append((int(m.group(1), 16), bool(ENDS.match(mnem))))
    for sec in secs.values():
        sec["offs"] = [o for o, _ in sec["insn"]]
        sec["symoffs"] = [o for o, _ in sec["syms"]]
    return secs


def shorten(sym):
    """A readable name for a Rust v0 symbol: its last path components (`rx::feed`)."""
    if not sym.startswith("_R"):
        return sym
    out = []
    i = 2
    while i < len(sym):
        c = sym[i]
        if c.isdigit():
            j = i
            while j < len(sym) and sym[j].isdigit():
                j += 1
            n = int(sym[i:j])
            if sym[j:j + 1] == "_":
                j += 1
            out.append(sym[j:j + n])
            i = j + n
        elif sym.startswith("Cs", i) or (c in "Bs" and re.match(r"[0-9a-zA-Z]*_", sym[i + 1:])):
            # A crate's disambiguator, a back reference, a disambiguator: to their '_'.
            i = sym.index("_", i + 1) + 1
        else:
            i += 1
    out = [p for p in out if p and p != "siw_rs_main"]
    return "::".join(out[-3:]) if out else sym


def report(d):
    import bisect

    runs = collections.defaultdict(dict)  # (row, drv) -> {n: counts}
    for f in sorted(os.listdir(d)):
        m = re.match(r"^exec-(.+)-(siw|siw_rs)-(\d+)\.log$", f)
        if m:
            runs[(m.group(1), m.group(2))][int(m.group(3))] = os.path.join(d, f)
    mods = {}
    for drv in ("siw", "siw_rs"):
        sf = os.path.join(d, f"sections-{drv}.txt")
        ko = os.path.join(d, f"{drv}.ko")
        if not (os.path.exists(sf) and os.path.exists(ko)):
            continue
        secs = disassemble(ko)
        bases = []
        with open(sf) as f:
            for line in f:
                _, name, addr = line.split()
                if name in secs and int(addr, 16):
                    bases.append((int(addr, 16), name))
        mods[drv] = (secs, sorted(bases))

    def locate(drv, pc):
        secs, bases = mods[drv]
        i = bisect.bisect_right([b for b, _ in bases], pc) - 1
        if i < 0:
            return None
        base, name = bases[i]
        sec = secs[name]
        off = pc - base
        if not sec["insn"] or off > sec["insn"][-1][0]:
            return None
        return name, off

    def logged(path):
        pcs = collections.Counter()
        with open(path, errors="replace") as f:
            for line in f:
                m = re.search(r"\[[0-9a-f]+/([0-9a-f]+)/", line)
                if m:
                    pcs[int(m.group(1), 16)] += 1
        return pcs

    def count(drv, pcs, starts):
        per_fn = collections.Counter()
        per_block = collections.Counter()
        blocks = 0
        secs, _ = mods[drv]
        for pc, n in pcs.items():
            loc = locate(drv, pc)
            if loc is None:
                continue
            name, off = loc
            sec = secs[name]
            offs = sec["offs"]
            i = bisect.bisect_left(offs, off)
            k = 0
            base = pc - off
            while i < len(offs):
                k += 1
                if sec["insn"][i][1]:
                    break
                i += 1
                if i < len(offs) and base + offs[i] in starts:
                    break
            j = bisect.bisect_right(sec["symoffs"], off) - 1
            fn = shorten(sec["syms"][j][1]) if j >= 0 else "?"
            per_fn[fn] += k * n
            if j >= 0:
                per_block[(fn, off - sec["syms"][j][0], k)] += n
            blocks += n
        return per_fn, per_block, blocks

    for (row, drv), byn in sorted(runs.items(), key=lambda x: (x[0][0], x[0][1] != "siw")):
        if drv not in mods or len(byn) < 2:
            continue
        (ns, ps), (nl, pl) = sorted(byn.items())[:2]
        cs, cl = logged(ps), logged(pl)
        # Both runs cut their blocks at the same places: where a block started in either.
        # Cut where only one run saw a block start, the same code would count differently
        # in the two, and the difference would not be the added messages' alone.
        starts = set(cs) | set(cl)
        fs, ks, bs = count(drv, cs, starts)
        fl, kl, bl = count(drv, cl, starts)
        m = nl - ns
        diff = collections.Counter(fl)
        diff.subtract(fs)
        total = sum(diff.values())
        res = {}
        for n in (ns, nl):
            rf = os.path.join(d, f"result-{row}-{drv}-{n}.txt")
            res[n] = open(rf).read().strip() if os.path.exists(rf) else "?"
        print(f"## {drv} {row.replace('_', ' ')}: the driver's own code executes "
              f"{total / m:.0f} instructions and {(bl - bs) / m:.0f} translated blocks per "
              f"message (the {m} messages more of a run of {nl} than of {ns}; results "
              f"{res[ns]} and {res[nl]})")
        for fn, c in sorted(diff.items(), key=lambda x: -x[1])[:25]:
            if c:
                print(f"{c / m:10.1f} {fn}")
        # The blocks that execute the most, as function+offset (objdump -d names the
        # instructions), with their length and how often each runs per message.
        kd = collections.Counter(kl)
        kd.subtract(ks)
        print(f"# {drv} {row.replace('_', ' ')}: the busiest blocks (instructions per message,"
              " runs per message, length, function+offset)")
        for (fn, off, k), c in sorted(kd.items(), key=lambda x: -x[1] * x[0][2])[:30]:
            if c:
                print(f"{c * k / m:10.1f} {c / m:6.2f} {k:4d} {fn}+{off:#x}")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "watch":
        watch(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 3 and sys.argv[1] == "report":
        report(sys.argv[2])
    else:
        sys.exit(__doc__)
