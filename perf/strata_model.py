# SPDX-License-Identifier: BSD-3-Clause
"""strata_model: the schedule simulator behind perf/strata-model.

Loads the schedules strata dumps (STRATA_SCHEDULE_DUMP=DIR), reads a machine file
(perf/machines/*.json) and replays the schedules of all ranks of one call together
as a discrete-event simulation. perf/MODEL.md describes the model.
"""
import bisect
import heapq
import json
import math
import os
import re
import sys
from collections import defaultdict

# busbw factor per collective (nccl-tests conventions, as perf/strata_bench prints).
def bus_factor(coll, n):
    if coll == "allreduce":
        return 2.0 * (n - 1) / n
    if coll in ("allgather", "reduce_scatter", "reduce_scatter_block", "alltoall"):
        return (n - 1) / n
    return 1.0


def parse_size(s):
    m = re.fullmatch(r"(\d+)([KMG]?)i?B?", s.strip(), re.I)
    if not m:
        raise SystemExit("strata-model: bad size %r (use e.g. 4096, 64K, 1M, 1G)" % s)
    return int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(2).upper()]


def fmt_size(b):
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if b >= 1 << shift and b % (1 << shift) == 0:
            return "%d%s" % (b >> shift, unit)
    return str(b)


# ---------------------------------------------------------------- dumps

class Job:
    """The schedules of every rank of one call: meta (layout) and steps per rank."""

    def __init__(self, key, metas, steps):
        self.key = key              # (coll, alg, bytes, size, nodes, segment)
        self.coll, self.alg, self.bytes, self.size, self.nodes, self.segment = key
        self.meta = metas           # per rank: the dump line without its steps
        self.steps = steps          # per rank: list of step dicts

    def scaled(self, factor):
        """The same schedule with every byte count multiplied by factor: the schedule of
        (bytes x factor) at segment x factor, when splits divide evenly (synth dumps)."""
        steps = [[dict(s, bytes=int(s.get("bytes", 0) * factor)) if "bytes" in s else s for s in r]
                 for r in self.steps]
        key = (self.coll, self.alg, int(self.bytes * factor), self.size, self.nodes,
               int(self.segment * factor))
        return Job(key, self.meta, steps)


def load_dumps(dirs):
    """Jobs found in the dump directories, complete ones only (every rank present)."""
    found = defaultdict(dict)
    for d in dirs:
        for name in sorted(os.listdir(d)):
            if not re.fullmatch(r"schedule\.\d+\.jsonl", name):
                continue
            with open(os.path.join(d, name)) as f:
                for line in f:
                    line = line.strip()
                    if not line:
                        continue
                    rec = json.loads(line)
                    key = (rec["coll"], rec["alg"], rec["bytes"], rec["size"], rec["nodes"],
                           rec["segment"])
                    found[key][rec["rank"]] = rec  # a later job in the same dir wins
    jobs = []
    for key, ranks in sorted(found.items()):
        size = key[3]
        if sorted(ranks) != list(range(size)):
            print("strata-model: %s/%s %d bytes: dumps of %d of %d ranks; skipped"
                  % (key[0], key[1], key[2], len(ranks), size), file=sys.stderr)
            continue
        metas = [{k: v for k, v in ranks[r].items() if k != "steps"} for r in range(size)]
        jobs.append(Job(key, metas, [_one_way(ranks[r]["steps"]) for r in range(size)]))
    return jobs


def _one_way(steps):
    """A schedule that reads node peers' buffers in place where it can builds both ways
    and decides while it runs (src/engine.h, Schedule::when; the dump marks such steps
    "when": [decider, want]). The model takes the in-place way, as a device team whose
    peers' buffers are all shareable does: the other way's steps become nops, and the
    deciding poll steps cost nothing."""
    out = []
    for s in steps:
        w = s.get("when")
        if s["kind"] == "poll" or (w is not None and not w[1]):
            s = {"kind": "nop", "deps": s.get("deps", [])}
        out.append(s)
    return out


# ---------------------------------------------------------------- machine

class Rate:
    """A rate in GB/s that may depend on the size of one step: [[bytes, GB/s], ...],
    interpolated linearly in log2(bytes), flat beyond both ends. A number is a flat rate."""

    def __init__(self, spec):
        pts = [[1, float(spec)]] if isinstance(spec, (int, float)) else sorted(spec)
        self.x = [math.log2(max(p[0], 1)) for p in pts]
        self.y = [float(p[1]) for p in pts]

    def __call__(self, nbytes):
        x = math.log2(max(nbytes, 1))
        i = bisect.bisect_left(self.x, x)
        if i == 0:
            return self.y[0]
        if i >= len(self.x):
            return self.y[-1]
        x0, x1, y0, y1 = self.x[i - 1], self.x[i], self.y[i - 1], self.y[i]
        return y0 + (y1 - y0) * (x - x0) / (x1 - x0)


class Tiered:
    """Rates that depend on the step size and on how much memory the call touches:
    {"GBps": spec} (one rate table), or {"tiers": [[footprint bytes, spec], ...]}: the
    time per byte is interpolated between tiers in log2(footprint), flat outside."""

    def __init__(self, spec):
        if "tiers" in spec:
            tiers = sorted(spec["tiers"], key=lambda t: t[0])
            self.fx = [math.log2(t[0]) for t in tiers]
            self.rates = [Rate(t[1]) for t in tiers]
        else:
            self.fx, self.rates = [0.0], [Rate(spec["GBps"])]

    def us(self, traffic, step_bytes, footprint):
        """Microseconds to move `traffic` bytes in a step of `step_bytes` (the size the
        rate tables are keyed by) in a call that touches `footprint` bytes."""
        x = math.log2(max(footprint, 1))
        i = bisect.bisect_left(self.fx, x)
        if i == 0 or len(self.fx) == 1:
            return traffic / 1e3 / self.rates[0](step_bytes)
        if i >= len(self.fx):
            return traffic / 1e3 / self.rates[-1](step_bytes)
        w = (x - self.fx[i - 1]) / (self.fx[i] - self.fx[i - 1])
        return traffic / 1e3 * ((1 - w) / self.rates[i - 1](step_bytes) + w / self.rates[i](step_bytes))


def _set(m, dotted, value):
    node = m
    parts = dotted.split(".")
    for p in parts[:-1]:
        node = node.setdefault(p, {})
    node[parts[-1]] = value


class Machine:
    """A machine file (perf/machines/*.json). Its "oversubscribed" block ({dotted key:
    value}) replaces those parameters for a host run of more ranks than cores."""

    def __init__(self, path, overrides=()):
        with open(path) as f:
            self.raw = json.load(f)
        for o in overrides:  # --set a.b=value
            k, v = o.split("=", 1)
            _set(self.raw, k, json.loads(v))
        self._by_ranks = {}
        self._load(self.raw)

    def for_ranks(self, nranks):
        """The machine as a job of nranks ranks on it sees it."""
        over = self.raw.get("oversubscribed")
        if self.device or not over or not self.cores or nranks <= self.cores:
            return self
        if nranks not in self._by_ranks:
            m = json.loads(json.dumps(self.raw))
            for k, v in over.items():
                _set(m, k, v)
            twin = Machine.__new__(Machine)
            twin.raw, twin._by_ranks = m, {}
            twin._load(m)
            self._by_ranks[nranks] = twin
        return self._by_ranks[nranks]

    def _load(self, m):
        self.name = m.get("name", "machine")
        self.device = bool(m.get("device", False))
        self.cpu_us = float(m["step"]["cpu_us"])          # host thread, every non-nop step
        self.engine_us = float(m["step"]["engine_us"])    # added to each copy/reduce
        self.launch_us = float(m["step"].get("launch_us", 0.0))  # device: host cost to enqueue one
        self.flag_us = float(m["flag_us"])
        # A flag a GPU stream waits on (swait): seen this long after it is raised.
        self.stream_flag_us = float(m.get("stream_flag_us", self.flag_us))
        self.cores = m.get("cores")                       # CPUs all ranks share (host runs)
        self.transfer_holds_cpu = bool(m.get("transfer_holds_cpu", False))
        self.zero_copy_above = m.get("zero_copy_above")   # host dumps: copy-in steps vanish
        self.direct_transfers = bool(m.get("direct_transfers", False))  # bounce copies vanish
        self.levels = {}
        for lv in ("intra", "inter"):
            spec = m["levels"][lv]
            self.levels[lv] = (float(spec["latency_us"]), Rate(spec["GBps"]),
                               int(spec.get("eager_bytes", 0)))
        self.call_us = float(m.get("call_us", 0.0))        # per call, outside the schedule
        self.copy = Tiered(m["copy"])
        r = m["reduce"]
        self.reduce = Tiered(r)
        self.red_wide_ops = int(r.get("wide_operands", 0))
        self.reduce_wide = Tiered(r["wide"]) if "wide" in r else self.reduce
        self.peer = Rate(m["peer_GBps"]) if "peer_GBps" in m else None

    def footprint(self, job, ranks_here):
        """Bytes a call touches on the host: the user buffers of every rank on it."""
        per_rank = {"bcast": 1.0, "allgather": 1.0 + 1.0 / job.size,
                    "reduce_scatter": 1.0 + 1.0 / job.size}.get(job.coll, 2.0)
        return per_rank * max(job.bytes, 1) * ranks_here

    def copy_us(self, nbytes, remote, foot):
        t = self.copy.us(nbytes, nbytes, foot)
        if remote and self.peer:
            t = max(t, nbytes / 1e3 / self.peer(nbytes))
        return self.engine_us + t

    def reduce_us(self, nbytes, srcs, remote, foot):
        traffic = (srcs + 1) * nbytes  # operands read + result written
        t = self.reduce.us(traffic, nbytes, foot)
        if self.red_wide_ops > 2 and srcs > 2:
            w = min(1.0, (srcs - 2) / float(self.red_wide_ops - 2))
            t = (1 - w) * t + w * self.reduce_wide.us(traffic, nbytes, foot)
        if remote and self.peer:
            t = max(t, remote * nbytes / 1e3 / self.peer(nbytes))
        return self.engine_us + t

    def multi_us(self, kind, nbytes, srcs, dsts, rsrcs, rdsts, foot):
        """A copy or reduction that reads srcs operands and writes dsts results of nbytes
        each, rsrcs and rdsts of them node peers' memory (one kernel): the local shares at
        the memory's rate, the remote ones over the rank's NVLink, which the peers' own
        kernels load as much the other way (a symmetric schedule: a peer reads this rank's
        operand while this rank reads its), so its remote bytes both ways count."""
        local = (srcs - rsrcs + dsts - rdsts) * nbytes
        if kind == "copy":
            t = self.copy.us(local / 2.0, nbytes, foot)  # copy rates count bytes copied
        else:
            t = self.reduce.us(local, nbytes, foot)
        if self.peer and rsrcs + rdsts:
            t = max(t, (rsrcs + rdsts) * nbytes / 1e3 / self.peer(nbytes))
        return self.engine_us + t


# ---------------------------------------------------------------- simulation

class Result:
    def __init__(self, time_us, finish, busy):
        self.time_us = time_us      # the call: the last step of any rank
        self.finish = finish        # per rank
        self.busy = busy            # {"engine", "net", "cpu": us} of the busiest rank each


def _remote_readers(steps, rank, local_size):
    """Per copy/reduce step: how many node peers' memory it reads (the dump does not
    say; this infers it). A step reads a peer's memory when it follows (through joins)
    a wait on that peer's flag other than 'done' (done guards reuse of a stage and
    carries no data). A reduction that no receive feeds, on a node of several ranks, is
    a node reduction: it reads srcs - 1 peers' data (on a device team that maps its
    peers' buffers no wait precedes it)."""
    owners_memo, fed_memo = {}, {}

    def owners(i):
        if i in owners_memo:
            return owners_memo[i]
        owners_memo[i] = set()
        out = set()
        for d in steps[i].get("deps", []):
            s = steps[d]
            if s["kind"] in ("wait", "swait") and s.get("owner") != rank and s.get("flag") != "done":
                out.add(s["owner"])
            elif s["kind"] == "nop":
                out |= owners(d)
        owners_memo[i] = out
        return out

    def fed_by_recv(i):
        if i not in fed_memo:
            fed_memo[i] = False
            fed_memo[i] = any(steps[d]["kind"] == "recv" or
                              (steps[d]["kind"] in ("nop", "copy") and fed_by_recv(d))
                              for d in steps[i].get("deps", []))
        return fed_memo[i]

    remote = {}
    for i, s in enumerate(steps):
        if s["kind"] == "copy":
            remote[i] = 1 if owners(i) else 0
        elif s["kind"] == "reduce":
            peers = s.get("srcs", 1) - 1
            node = peers if local_size > 1 and not fed_by_recv(i) else 0
            remote[i] = min(peers, max(len(owners(i)), node))
    return remote


def _copy_ins(steps, rank):
    """Copy steps that only fill this rank's stage for node peers: a signal of this
    rank's 'ready' flag depends on them. On a device team that maps its peers' buffers
    (allreduce hier_ring, bcast), they do not exist."""
    out = set()
    for s in steps:
        if s["kind"] == "signal" and s.get("flag") == "ready" and s.get("owner") == rank:
            for d in s.get("deps", []):
                if steps[d]["kind"] == "copy":
                    out.add(d)
    return out


# Stream-side steps and what they are on a run without a stream (a host team).
HOST_KIND = {"swait": "wait", "swrite": "signal"}

ZERO_COPY_ALGS = {("allreduce", "hier_ring"), ("bcast", "hier_chain"), ("bcast", "hier_tree")}


def simulate(job, mc):
    """Replays every rank's schedule of one call; returns a Result (microseconds).

    Resources: per rank one host thread ("cpu": posts every step, cpu_us each) and one
    engine (copy/reduce in order: the same CPU on a host run, the one CUDA stream on a
    device run); per rank and level one outgoing and one incoming link. On a host run
    with `cores`, CPU work of all ranks also needs one of the cores (first come, first
    served). A wait completes flag_us after the signal it needs (at once for this
    rank's own flags, or for value -1: the previous call's end). A transfer starts when
    both sides are posted (eager ones when the send is) and the links are free.
    Device runs: a stream-side wait (swait) costs no host work and ends stream_flag_us
    after the flag is raised; a stream-side write (swrite) raises it when its deps are
    done; a kernel that depends on either is launched as soon as they are enqueued.
    A copy/reduce with dsts/remote_srcs/remote_dsts is one multi-peer kernel (multi_us).
    """
    n = job.size
    mc = mc.for_ranks(n)
    node_of = [m["node"] for m in job.meta]
    foot = mc.footprint(job, n if not mc.device else 1)
    # A host team's schedule replayed as a device team's (the dump says which it is).
    zero_copy = (mc.device and not job.meta[0].get("device") and mc.zero_copy_above is not None
                 and job.bytes > mc.zero_copy_above and (job.coll, job.alg) in ZERO_COPY_ALGS)
    shared_engine = not mc.device
    # A device team over a transport that cannot touch GPU memory: every message goes
    # through the bounce channel (btl/p2p.h), which the schedule does not show.
    bounce = mc.device and not mc.direct_transfers

    steps = job.steps
    if not mc.device:  # no stream: a stream-side wait or write is the host's
        steps = [[dict(s, kind=HOST_KIND[s["kind"]]) if s["kind"] in HOST_KIND else s for s in r]
                 for r in steps]
    ndeps = [[len(s.get("deps", [])) for s in r] for r in steps]
    users = [[[] for _ in r] for r in steps]
    for r in range(n):
        for i, s in enumerate(steps[r]):
            for d in s.get("deps", []):
                users[r][d].append(i)
    remote = [_remote_readers(steps[r], r, job.meta[r]["local_size"]) for r in range(n)]
    free_copy = [(_copy_ins(steps[r], r) if zero_copy and job.meta[r]["local_size"] > 1 else set())
                 for r in range(n)]

    # Sends and receives pair up in schedule order per (sender, receiver, tag).
    sendq, pair = defaultdict(list), {}
    for r in range(n):
        for i, s in enumerate(steps[r]):
            if s["kind"] == "send":
                sendq[(r, s["peer"], s["tag"])].append(i)
    taken = defaultdict(int)
    for r in range(n):
        for i, s in enumerate(steps[r]):
            if s["kind"] == "recv":
                k = (s["peer"], r, s["tag"])
                q = sendq.get(k, [])
                if taken[k] >= len(q):
                    raise SystemExit("strata-model: %s/%s %d: rank %d step %d: no send matches "
                                     "(peer %d tag %d)" % (job.coll, job.alg, job.bytes, r, i,
                                                           s["peer"], s["tag"]))
                si = q[taken[k]]
                taken[k] += 1
                pair[(s["peer"], si)] = (r, i)
                pair[(r, i)] = (s["peer"], si)

    # Stream-side waits and writes (swait, swrite) and joins on the team's stream (a nop
    # marked "lane") cost the host nothing and are enqueued as soon as their own deps
    # are. A kernel that depends on one, or a kernel on the stream ("lane": work chained
    # on the GPU, engine.h) that depends on another there, is "split": launched once its
    # deps are enqueued (a kernel's when it was launched; those on the host side: done),
    # started once all are done. Without "lane" marks every kernel waits for its deps to
    # be done before the host launches it.
    lane_k = [[mc.device and bool(s.get("lane")) and s["kind"] in ("copy", "reduce") for s in r] for r in steps]
    stream_side = [[s["kind"] in HOST_KIND or (mc.device and bool(s.get("lane")) and s["kind"] == "nop")
                    for s in r] for r in steps]
    early = [[stream_side[r][i] or lane_k[r][i] for i in range(len(steps[r]))] for r in range(n)]
    split = [[stream_side[r][i] or (s["kind"] in ("copy", "reduce") and
                                    any(early[r][d] for d in s.get("deps", [])))
              for i, s in enumerate(steps[r])] for r in range(n)]
    hdeps = [[len(s.get("deps", [])) for s in r] for r in steps]
    launched = [{} for _ in range(n)]   # split kernels: when the host launched them
    ready_at = [{} for _ in range(n)]   # split kernels ready before their launch

    def host_ready(r, u, t):
        hdeps[r][u] -= 1
        if hdeps[r][u] == 0:
            push(t, "issued" if stream_side[r][u] else "launch", r, u)

    def engine_us(r, i, s):
        nbytes = s.get("bytes", 0)
        if any(f in s for f in ("dsts", "remote_srcs", "remote_dsts")):
            # A multi-peer kernel: a missing remote_srcs is inferred as for other steps,
            # a missing remote_dsts is every destination but the rank's own.
            dsts = s.get("dsts", 1)
            srcs = s.get("srcs", 1 if s["kind"] == "copy" else 2)
            return mc.multi_us(s["kind"], nbytes, srcs, dsts,
                               s.get("remote_srcs", remote[r].get(i, 0)),
                               s.get("remote_dsts", dsts - 1), foot)
        if s["kind"] == "copy":
            return mc.copy_us(nbytes, remote[r].get(i, 0), foot)
        return mc.reduce_us(nbytes, s.get("srcs", 2), remote[r].get(i, 0), foot)

    cpu_free = [mc.call_us] * n  # the call's own work before its schedule runs
    eng_free = [0.0] * n
    tx_free = defaultdict(float)
    rx_free = defaultdict(float)
    busy_eng = [0.0] * n
    busy_cpu = [0.0] * n
    busy_net = [0.0] * n
    cores = [0.0] * int(mc.cores) if (mc.cores and not mc.device and n > mc.cores) else None
    posted = {}
    flags = defaultdict(list)       # (owner, flag) -> [(value, time)]
    waiters = defaultdict(list)     # (owner, flag) -> [(value, rank, step, ready time)]
    done = [[None] * len(r) for r in steps]
    heap, seq = [], [0]

    def push(t, kind, r, i):
        seq[0] += 1
        heapq.heappush(heap, (t, seq[0], kind, r, i))

    def cpu_work(r, t, dur):
        """Runs dur of CPU work on rank r no earlier than t; returns its end."""
        start = max(t, cpu_free[r])
        busy_cpu[r] += dur
        if cores is not None:
            start = max(start, cores[0])
            heapq.heapreplace(cores, start + dur)
        cpu_free[r] = start + dur
        return start + dur

    def flag_time(r, owner, name, value, t, lat):
        """When a wait of rank r for (owner, name) >= value that is ready at t completes,
        lat after a peer raised it; None while no signal has reached value."""
        if value < 0:
            return t
        for v, ts in flags[(owner, name)]:
            if v >= value:
                return max(t, ts + (0.0 if owner == r else lat))
        return None

    def transfer(sr, si, rr, ri, t):
        s = steps[sr][si]
        nbytes = s.get("bytes", 0)
        lv = "intra" if node_of[sr] == node_of[rr] else "inter"
        lat, bw, eager = mc.levels[lv]
        dur = nbytes / 1e3 / bw(nbytes)
        if bounce:  # device memory through host buffers: a copy out and a copy in per message
            dur += 2 * mc.copy_us(nbytes, 0, foot)
        if nbytes <= eager:
            # Eager: the data left when the send was posted; the receive takes it on arrival.
            sent = posted[(sr, si)]
            start = max(sent, tx_free[(sr, lv)])
            tx_free[(sr, lv)] = start + dur
            busy_net[sr] += dur
            push(max(t, start + dur + lat), "done", rr, ri)
            return
        start = max(t + lat, tx_free[(sr, lv)], rx_free[(rr, lv)])
        if mc.transfer_holds_cpu:
            end = cpu_work(rr, start, dur)
            start = end - dur
        end = start + dur
        tx_free[(sr, lv)] = rx_free[(rr, lv)] = end
        busy_net[sr] += dur
        push(end, "done", sr, si)
        push(end + lat, "done", rr, ri)

    for r in range(n):
        for i in range(len(steps[r])):
            if ndeps[r][i] == 0:
                push(mc.call_us, "ready", r, i)
                if stream_side[r][i]:
                    push(mc.call_us, "issued", r, i)

    while heap:
        t, _, kind, r, i = heapq.heappop(heap)
        s = steps[r][i]
        k = s["kind"]
        if kind == "done":
            if done[r][i] is not None:
                continue
            done[r][i] = t
            if k in ("signal", "swrite"):
                key = (s["owner"], s["flag"])
                flags[key].append((s["value"], t))
                keep = []
                for (v, wr, wi, wt, lat) in waiters[key]:
                    if v <= s["value"]:
                        push(max(wt, t + (0.0 if s["owner"] == wr else lat)), "done", wr, wi)
                    else:
                        keep.append((v, wr, wi, wt, lat))
                waiters[key] = keep
            for u in users[r][i]:
                ndeps[r][u] -= 1
                if ndeps[r][u] == 0:
                    push(t, "ready", r, u)
                if split[r][u] and not early[r][i]:
                    host_ready(r, u, t)
            continue
        if kind == "issued":  # a stream-side step or lane kernel is enqueued: steps split on it may launch
            for u in users[r][i]:
                if split[r][u]:
                    host_ready(r, u, t)
            continue
        if kind == "launch":  # a split kernel's deps are enqueued: the host launches it
            launched[r][i] = cpu_work(r, t, mc.cpu_us + mc.launch_us)
            if lane_k[r][i]:
                push(launched[r][i], "issued", r, i)
            if i in ready_at[r]:
                push(ready_at[r].pop(i), "ready", r, i)
            continue
        if kind == "xfer":  # both sides of a rendezvous transfer are posted
            rr, ri = pair[(r, i)]
            transfer(r, i, rr, ri, t)
            continue
        # kind == "ready": every dependency of step i is done at t.
        if k == "nop":
            push(t, "done", r, i)
        elif k in ("wait", "swait"):
            lat = mc.flag_us if k == "wait" else mc.stream_flag_us
            ft = flag_time(r, s["owner"], s["flag"], s["value"], t, lat)
            if ft is not None:
                push(ft, "done", r, i)
            else:
                waiters[(s["owner"], s["flag"])].append((s["value"], r, i, t, lat))
        elif k == "swrite":  # the stream writes the flag when it gets there: no host work
            push(t, "done", r, i)
        elif k == "signal":
            push(cpu_work(r, t, mc.cpu_us), "done", r, i)
        elif k in ("copy", "reduce"):
            if i in free_copy[r]:
                push(t, "done", r, i)
                continue
            if split[r][i] and i not in launched[r]:
                ready_at[r][i] = t  # all deps done before the host launched it
                continue
            dur = engine_us(r, i, s)
            busy_eng[r] += dur
            if shared_engine:
                end = cpu_work(r, t, mc.cpu_us + dur)
            elif split[r][i]:
                start = max(t, launched[r][i], eng_free[r])
                end = eng_free[r] = start + dur
            else:
                at = cpu_work(r, t, mc.cpu_us + mc.launch_us)
                if lane_k[r][i]:
                    push(at, "issued", r, i)
                start = max(at, eng_free[r])
                end = eng_free[r] = start + dur
            push(end, "done", r, i)
        elif k in ("send", "recv"):
            at = cpu_work(r, t, mc.cpu_us)
            posted[(r, i)] = at
            pr, pi = pair[(r, i)]
            sr, si = (r, i) if k == "send" else (pr, pi)
            rr, ri = (pr, pi) if k == "send" else (r, i)
            nbytes = steps[sr][si].get("bytes", 0)
            lv = "intra" if node_of[sr] == node_of[rr] else "inter"
            if nbytes <= mc.levels[lv][2]:
                if k == "send":
                    push(at, "done", r, i)
                    if (rr, ri) in posted:
                        transfer(sr, si, rr, ri, posted[(rr, ri)])
                elif (sr, si) in posted:
                    transfer(sr, si, rr, ri, at)
            elif (pr, pi) in posted:
                push(max(at, posted[(pr, pi)]), "xfer", sr, si)
        else:
            raise SystemExit("strata-model: unknown step kind %r" % k)

    stuck = [(r, i) for r in range(n) for i in range(len(steps[r])) if done[r][i] is None]
    if stuck:
        r, i = stuck[0]
        raise SystemExit("strata-model: %s/%s %d bytes: %d steps never complete (first: rank %d "
                         "step %d %s); the dump and the model disagree"
                         % (job.coll, job.alg, job.bytes, len(stuck), r, i, steps[r][i]))
    finish = [max(d) if d else 0.0 for d in done]
    worst = max(range(n), key=lambda x: finish[x])
    return Result(max(finish), finish,
                  {"engine": max(busy_eng), "net": max(busy_net), "cpu": max(busy_cpu), "rank": worst})
