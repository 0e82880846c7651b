#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The host half of BENCH_TRACE=1 make bench: exact instruction counts of the drivers' own
code per message.

QEMU runs the bench VM with `-d nochain` and `-dfilter` on the module area, and logs a line
for every translated block it executes there while `-d exec` is on. The guest asks for it
to be switched on and off around each run (files ctl.N in the shared directory); `watch`
does the switching through QEMU's monitor, has QEMU write the log into a FIFO, counts the
blocks as they come (exec-ROW-DRIVER-N.pcs) and acknowledges (ack.N). `report` then counts,
for each run, the blocks executed in each driver's module and the instructions in them
(from `objdump -d` of the module: a block runs from where it starts to its first jump,
call or return, or to where a block logged in either run of the row starts), and prints
per row and driver the difference between the long and the short run per message, by
function.

With BENCH_TRACE=kernel QEMU logs the whole kernel's blocks too (`-dfilter` from the
kernel's text up), and `report` counts them as well, from `objdump -d` of the vmlinux the
VM booted (its link addresses moved by the KASLR offset the guest reports): per row and
driver every instruction the kernel executes per message, the driver's module included,
by function, and per row the functions where the two drivers differ the most. User space
(perftest, libsiw) is not logged.

    bench-trace.py watch DIR MONITOR_SOCKET
    bench-trace.py report DIR
"""
import collections
import os
import re
import socket
import subprocess
import sys
import threading
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
                # The log goes through a FIFO and is counted as it comes (a run's log of
                # the whole kernel is gigabytes): the blocks' counts are kept, not the log.
                name = re.sub(r"\.log$", "", words[1])
                fifo = os.path.join(d, name + ".fifo")
                os.mkfifo(fifo)
                counter = threading.Thread(target=count_stream,
                                           args=(fifo, os.path.join(d, name + ".pcs")))
                counter.start()
                hmp(sock, "logfile " + fifo)
                hmp(sock, "log exec,nochain")
            else:
                hmp(sock, "log nochain")
                # Closes the FIFO (QEMU frees the old file after an RCU grace period): the
                # run's counts are complete when the counter has seen its end.
                hmp(sock, "logfile " + os.path.join(d, "qemu-idle.log"))
                counter.join()
                os.unlink(fifo)
        except OSError:
            return
        open(os.path.join(d, f"ack.{seq}"), "w").close()
        seq += 1


def count_stream(path, out):
    """Counts the block starts of the `-d exec` log QEMU writes into the FIFO `path`, until
    QEMU closes it; writes them to `out`, a line each: start (hex) and count."""
    pcs = collections.Counter()
    pat = re.compile(rb"\[[0-9a-f]+/([0-9a-f]+)/")
    tail = b""
    with open(path, "rb") as f:
        while True:
            chunk = f.read(1 << 22)
            if not chunk:
                break
            chunk = tail + chunk
            cut = chunk.rfind(b"\n") + 1
            tail = chunk[cut:]
            pcs.update(pat.findall(chunk, 0, cut))
    pcs.update(pat.findall(tail))
    with open(out + ".tmp", "w") as f:
        for pc, n in pcs.items():
            f.write(f"{int(pc, 16):x} {n}\n")
    os.rename(out + ".tmp", out)


ENDS = re.compile(r"^(j\w*|call\w*|ret\w*|iret\w*|lret\w*|sysret\w*|syscall|ud2|int3|hlt)$")


def disassemble(ko):
    """Per section: sorted instruction offsets, whether each ends a block, and the
    symbols (offset, name). (For vmlinux the offsets are link addresses.)"""
    proc = subprocess.Popen(["objdump", "-d", "--no-show-raw-insn", ko],
                            stdout=subprocess.PIPE, text=True, errors="replace")
    secs = {}
    sec = None
    for line in proc.stdout:
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
        m = re.match(r"^\s*([0-9a-f]+):\s+(\S+)", line)
        if m:
            mnem = m.group(2)
            sec["insn"].append((int(m.group(1), 16), bool(ENDS.match(mnem))))
    if proc.wait() != 0:
        sys.exit(f"bench-trace: objdump -d {ko} failed")
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


def image(secs, bases):
    """A body of code to count in: its disassembly and where each section lies now,
    sorted."""
    bases = sorted(bases)
    return {"secs": secs, "bases": bases, "addrs": [b for b, _ in bases]}


def module_image(d, drv):
    """The driver's module, from its .ko and the section addresses the guest wrote."""
    sf = os.path.join(d, f"sections-{drv}.txt")
    ko = os.path.join(d, f"{drv}.ko")
    if not (os.path.exists(sf) and os.path.exists(ko)):
        return None
    secs = disassemble(ko)
    bases = []
    with open(sf) as f:
        for line in f:
            _, name, addr = line.split()
            if name in secs and int(addr, 16):
                bases.append((int(addr, 16), name))
    return image(secs, bases)


def kernel_image(d):
    """vmlinux (BENCH_TRACE=kernel), its sections moved by the KASLR offset: the guest
    wrote where `_stext` lies, `nm` says where it was linked."""
    vml = os.path.join(d, "vmlinux")
    kt = os.path.join(d, "kernel-text.txt")
    if not (os.path.exists(vml) and os.path.exists(kt)):
        return None
    with open(kt) as f:
        now = int(f.read().split()[0], 16)
    nm = subprocess.run(["nm", vml], check=True, capture_output=True, text=True).stdout
    linked = [int(line.split()[0], 16) for line in nm.splitlines() if line.endswith(" _stext")]
    if not linked:
        sys.exit("bench-trace: no _stext in vmlinux")
    slide = now - linked[0]
    secs = disassemble(vml)
    bases = []
    for name, sec in list(secs.items()):
        if not sec["insn"]:
            del secs[name]
            continue
        # Offsets from the section's first instruction, as in a module.
        base = sec["insn"][0][0]
        sec["insn"] = [(o - base, e) for o, e in sec["insn"]]
        sec["offs"] = [o - base for o in sec["offs"]]
        sec["syms"] = [(o - base, n) for o, n in sec["syms"]]
        sec["symoffs"] = [o - base for o in sec["symoffs"]]
        bases.append((base + slide, name))
    return image(secs, bases)


TRACE = re.compile(r"\[[0-9a-f]+/([0-9a-f]+)/")


def logged(path):
    """How often each block start was logged: from a log, or from the counts `watch`
    kept of one (.pcs)."""
    pcs = collections.Counter()
    if path.endswith(".pcs"):
        with open(path) as f:
            for line in f:
                pc, n = line.split()
                pcs[int(pc, 16)] += int(n)
        return pcs
    with open(path, errors="replace") as f:
        for line in f:
            m = TRACE.search(line)
            if m:
                pcs[int(m.group(1), 16)] += 1
    return pcs


def count(img, pcs, starts):
    """The instructions of the logged blocks that lie in `img`: per function and per
    block ((function, offset, length) -> runs), and how many blocks ran. A block runs
    from its start to its first jump, call or return, or to the next place in `starts`."""
    import bisect

    per_fn = collections.Counter()
    per_block = collections.Counter()
    blocks = 0
    for pc, n in pcs.items():
        i = bisect.bisect_right(img["addrs"], pc) - 1
        if i < 0:
            continue
        base, name = img["bases"][i]
        sec = img["secs"][name]
        off = pc - base
        if not sec["insn"] or off > sec["insn"][-1][0]:
            continue
        offs = sec["offs"]
        i = bisect.bisect_left(offs, off)
        k = 0
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


def report(d):
    runs = collections.defaultdict(dict)  # (row, drv) -> {n: log}
    for f in sorted(os.listdir(d)):
        m = re.match(r"^exec-(.+)-(siw|siw_rs)-(\d+)\.(log|pcs)$", f)
        if m:
            runs[(m.group(1), m.group(2))][int(m.group(3))] = os.path.join(d, f)
    mods = {drv: module_image(d, drv) for drv in ("siw", "siw_rs")}
    kern = kernel_image(d)
    whole = {}  # (row, drv) -> the kernel's instructions per message, by function

    for (row, drv), byn in sorted(runs.items(), key=lambda x: (x[0][0], x[0][1] != "siw")):
        if mods.get(drv) is None or len(byn) < 2:
            continue
        (ns, ps), (nl, pl) = sorted(byn.items())[:2]
        cs, cl = logged(ps), logged(pl)
        # Both runs cut their blocks at the same places: where a block started in either.
        # Cut where only one run saw a block start, the same code would count differently
        # in the two, and the difference would not be the added messages' alone.
        starts = set(cs) | set(cl)
        fs, ks, bs = count(mods[drv], cs, starts)
        fl, kl, bl = count(mods[drv], cl, starts)
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
        if kern is None:
            continue
        # The whole kernel: vmlinux, and the module (its functions marked [drv]).
        ksf, _, _ = count(kern, cs, starts)
        klf, _, _ = count(kern, cl, starts)
        kdiff = collections.Counter(klf)
        kdiff.subtract(ksf)
        ktotal = sum(kdiff.values())
        every = collections.Counter({k: v / m for k, v in kdiff.items()})
        for fn, c in diff.items():
            every[f"[{drv}] {fn}"] += c / m
        whole[(row, drv)] = every
        print(f"## {drv} {row.replace('_', ' ')}: the kernel executes "
              f"{(ktotal + total) / m:.0f} instructions per message, {ktotal / m:.0f} in "
              f"vmlinux and {total / m:.0f} in the driver's module; by function:")
        for fn, c in sorted(every.items(), key=lambda x: -x[1])[:40]:
            if abs(c) >= 0.5:
                print(f"{c:10.1f} {fn}")

    # Where the two drivers make the kernel work differently, per row.
    for row in sorted({r for r, _ in whole}):
        c, s = whole.get((row, "siw")), whole.get((row, "siw_rs"))
        if c is None or s is None:
            continue
        # The driver's own functions side by side as one line each: their names differ.
        def fold(w, drv):
            out = collections.Counter()
            for fn, v in w.items():
                out[f"(the driver's own code)" if fn.startswith(f"[{drv}] ") else fn] += v
            return out
        fc, fs = fold(c, "siw"), fold(s, "siw_rs")
        print(f"## {row.replace('_', ' ')}: the kernel's instructions per message, C siw "
              f"{sum(fc.values()):.0f}, siw_rs {sum(fs.values()):.0f}; where they differ "
              "the most (C siw, siw_rs, siw_rs minus C siw):")
        keys = set(fc) | set(fs)
        for k in sorted(keys, key=lambda k: -abs(fs[k] - fc[k]))[:40]:
            if abs(fs[k] - fc[k]) >= 1:
                print(f"{fc[k]:10.1f} {fs[k]:10.1f} {fs[k] - fc[k]:+10.1f} {k}")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "watch":
        watch(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 3 and sys.argv[1] == "report":
        report(sys.argv[2])
    else:
        sys.exit(__doc__)
