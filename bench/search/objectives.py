# Mirror of objectives.h, formula for formula: the same objectives for python3-optuna's
# samplers. Parameters arrive as internal values (categorical -> index of the choice).
# The driver compares both implementations on 200 points before any comparison is printed.
import math
from math import floor, log2, sqrt


def ints(lo, hi, log=False, step=1):
    return ("int", lo, hi, log, step)


def floats(lo, hi, log=False):
    return ("float", lo, hi, log, None)


def cats(names):
    return ("cat", names)


def ddp_allreduce(p):
    t, w = p["threads"], p["workers"]
    free_cores = max(32.0 - 2.0 * w, 1.0)
    eff = min(t, free_cores)
    compute = 100.0 / eff ** 0.9 + 3.0 * max(0.0, t - free_cores)
    bind_factor = [1.15, 0.95, 1.0, 1.05]
    b = int(p["bind"])
    compute *= bind_factor[b] * (1.1 if (b == 1 and t > 16.0) else 1.0)
    loader = 40.0 / (1.0 + w) + 0.5 * w
    hidden = max(0.0, loader - 5.0 * sqrt(p["prefetch"]))
    a = int(p["algo"])
    base = [1.0, 1.3, 1.1, 2.0]
    best_log = [5.0, 7.0, 4.0, 3.0]
    comm = base[a] * (5.0 + 0.8 * (log2(p["bucket_mb"]) - best_log[a]) ** 2)
    chunk = 0.5 * floor(abs(log2(p["chunk_kb"]) - 8.0) / 2.0)
    pin = 0.0 if p["pin_memory"] == 1.0 else 1.5
    return compute + hidden + comm + chunk + pin


def omp_gemm(p):
    t = p["threads"]
    bind = int(p["bind"])
    cores = 4.0 if bind == 2 else 24.0
    time = 200.0 / min(t, cores) + 1.5 * max(0.0, t - cores)
    if bind == 1:
        time *= 0.92
    bm, bn = p["block_m"], p["block_n"]
    kb = bm * bn * 8.0 / 1024.0
    eff = 2.5 if kb > 256.0 else 1.0 / (0.6 + 0.4 * sqrt(kb / 256.0))
    time *= eff
    s = int(p["schedule"])
    lc = log2(p["chunk"])
    best_chunk = [0.0, 4.0, 2.0]
    time += (2.0 if s == 0 else 1.0) + 0.4 * abs(lc - best_chunk[s])
    if p["nested"] == 1.0:
        time += 0.1 * t
    return time


def horovod_fusion(p):
    lf, lc = log2(p["fusion_mb"]), log2(p["cycle_ms"])
    fusion = 2.0 * (lf - 6.0 + 0.5 * (lc - 2.0)) ** 2 / 4.0 + 0.3 * (lc - 2.0) ** 2
    cache = 2.0 if p["cache_capacity"] < 1024.0 else 0.0
    r = p["ranks_per_node"]
    hier = 6.0 - 0.9 * r if p["hierarchical"] == 1.0 else 0.0
    cores_per_rank = 32.0 / r
    t = p["threads"]
    compute = 80.0 / (r * min(t, cores_per_rank)) + 2.0 * max(0.0, t - cores_per_rank)
    return 10.0 + fusion + cache + hier + compute


def dataloader(p):
    w, b = p["num_workers"], p["batch"]
    pf = p["prefetch_factor"]
    per_sample = 1.0 / min(w + 0.5, 12.0) + 0.002 * max(0.0, w - 12.0)
    gpu = 0.004 + 0.6 / b
    time = max(per_sample * 0.05, gpu) * 1000.0
    need_mb = w * b * pf * 0.05
    if need_mb > p["shm_mb"]:
        time += 50.0
    time += 0.002 * p["shm_mb"] / 64.0
    if p["pin_memory"] == 0.0:
        time *= 1.08
    if p["persistent"] == 0.0:
        time += 0.5 * w / 8.0
    time += 0.3 * abs(log2(b) - 7.0)
    return time


def mpi_collectives(p):
    btl = int(p["btl"])
    lat = [20.0, 6.0, 4.0, 3.0]
    best_eager = [6.0, 12.0, 8.0, 9.0]
    le = log2(p["eager_kb"])
    time = lat[btl] + 0.6 * abs(le - best_eager[btl])
    time += 0.4 * max(0.0, le + 2.0 - log2(p["rndv_kb"]))
    a = int(p["coll_algo"])
    algo_base = [8.0, 5.0, 6.0, 4.5, 7.0, 5.5]
    best_seg = [0.0, 6.0, 3.0, 8.0, 4.0, 5.0]
    time += algo_base[a] + 0.5 * (log2(p["segsize_kb"]) - best_seg[a]) ** 2 / 2.0
    ppn = p["ppn"]
    time += 60.0 / ppn + 0.15 * ppn
    bind, mp = int(p["bind"]), int(p["map"])
    if bind == 2:
        time += 3.0
    if bind == 1 and mp == 2:
        time -= 1.0
    if mp == 1 and ppn > 16.0:
        time += 4.0
    return time


def tf_threads(p):
    intra, inter = p["intra_op"], p["inter_op"]
    omp = p["omp_threads"]
    busy = intra * min(inter, 2.0) + 0.5 * omp
    time = 120.0 / min(intra, 28.0) + 30.0 / min(omp, 28.0)
    time += 20.0 / min(inter, 3.0)
    if busy > 32.0:
        time += 0.8 * (busy - 32.0)
    bt = p["blocktime_ms"]
    time += 4.0 if bt == 0.0 else 0.02 * abs(bt - 30.0)
    aff = int(p["affinity"])
    time *= 0.95 if aff == 0 else (1.0 if aff == 1 else 1.1)
    if p["fusion"] == 1.0:
        time -= 2.0
    time += 1.5 * abs(log2(p["batch"]) - 8.0)
    return time


def pipeline_parallel(p):
    s, m = p["stages"], p["microbatches"]
    tp = 2.0 ** p["tensor_parallel"]
    z = p["zero_stage"]
    recompute = p["recompute"] == 1.0
    memory = 80.0 / (s * tp) * (1.0 - 0.2 * z) * (0.5 if recompute else 1.0) + 0.05 * m
    time = 100.0 / (s * tp) * (1.0 + 0.15 * (tp - 1.0))
    time *= 1.0 + (s - 1.0) / m
    time += 0.1 * m
    if memory > 24.0:
        time += 100.0
    if recompute:
        time *= 1.3
    time += z * 1.5
    comm = 3.0 + 0.5 * (log2(p["bucket_mb"]) - 5.0) ** 2 / 3.0
    time += 0.3 * comm if p["overlap"] == 1.0 else comm
    time += 4.0 / p["grad_accum"] + 0.2 * p["grad_accum"]
    return time


def rugged_mixed(p):
    v = floor(abs(p["i0"] - 21.0) / 3.0) + 0.05 * (p["i1"] - 9.0) ** 2
    v += abs(log2(p["i2"]) - 5.0)
    v += floor(abs(p["i3"] - 35.0) / 10.0)
    l0, l1 = math.log10(p["f0"]), math.log10(p["f1"])
    v += (l0 - 1.0) ** 2 + (l1 + l0 - 0.5) ** 2
    v += 4.0 * (p["f2"] - 0.7) ** 2
    c0, c1, c2 = int(p["c0"]), int(p["c1"]), int(p["c2"])
    v += (0.0 if c0 == 3 else 2.0) + (0.0 if c1 == c0 else 1.5) + (0.0 if c2 == 1 else 1.0)
    return v


ABCDE = ["a", "b", "c", "d", "e"]
OBJECTIVES = [
    ("ddp_allreduce", [("threads", ints(1, 64)), ("workers", ints(1, 16)),
                       ("bind", cats(["none", "core", "socket", "numa"])),
                       ("algo", cats(["ring", "tree", "rec_doubling", "direct"])),
                       ("bucket_mb", floats(1.0, 1024.0, True)), ("chunk_kb", ints(4, 4096, True)),
                       ("pin_memory", cats(["false", "true"])), ("prefetch", ints(0, 8))],
     ddp_allreduce),
    ("omp_gemm", [("threads", ints(1, 64)), ("schedule", cats(["static", "dynamic", "guided"])),
                  ("chunk", ints(1, 1024, True)), ("block_m", ints(16, 256, False, 16)),
                  ("block_n", ints(16, 256, False, 16)),
                  ("bind", cats(["close", "spread", "master"])), ("nested", cats(["no", "yes"]))],
     omp_gemm),
    ("horovod_fusion", [("fusion_mb", floats(0.5, 512.0, True)), ("cycle_ms", floats(0.1, 100.0, True)),
                        ("cache_capacity", ints(16, 4096, True)), ("hierarchical", cats(["no", "yes"])),
                        ("threads", ints(1, 32)), ("ranks_per_node", ints(1, 8))],
     horovod_fusion),
    ("dataloader", [("num_workers", ints(0, 32)), ("batch", ints(8, 1024, True)),
                    ("prefetch_factor", ints(1, 16)), ("pin_memory", cats(["false", "true"])),
                    ("persistent", cats(["false", "true"])), ("shm_mb", floats(64.0, 8192.0, True))],
     dataloader),
    ("mpi_collectives", [("btl", cats(["tcp", "vader", "openib", "ucx"])), ("eager_kb", ints(1, 1024, True)),
                         ("rndv_kb", ints(4, 4096, True)),
                         ("coll_algo", cats(["a0", "a1", "a2", "a3", "a4", "a5"])),
                         ("segsize_kb", ints(1, 1024, True)), ("ppn", ints(1, 32)),
                         ("bind", cats(["core", "socket", "none"])), ("map", cats(["slot", "node", "numa"]))],
     mpi_collectives),
    ("tf_threads", [("intra_op", ints(1, 64)), ("inter_op", ints(1, 16)), ("omp_threads", ints(1, 64)),
                    ("blocktime_ms", ints(0, 200, False, 10)),
                    ("affinity", cats(["compact", "scatter", "none"])), ("fusion", cats(["off", "on"])),
                    ("batch", ints(16, 2048, True))],
     tf_threads),
    ("pipeline_parallel", [("stages", ints(1, 8)), ("microbatches", ints(1, 256, True)),
                           ("tensor_parallel", cats(["1", "2", "4", "8"])),
                           ("zero_stage", cats(["0", "1", "2", "3"])), ("recompute", cats(["no", "yes"])),
                           ("bucket_mb", floats(1.0, 1024.0, True)), ("overlap", cats(["no", "yes"])),
                           ("grad_accum", ints(1, 16))],
     pipeline_parallel),
    ("rugged_mixed", [("i0", ints(0, 31)), ("i1", ints(0, 31)), ("i2", ints(1, 256, True)),
                      ("i3", ints(0, 100, False, 5)), ("f0", floats(1e-3, 1e3, True)),
                      ("f1", floats(1e-3, 1e3, True)), ("f2", floats(0.0, 1.0)),
                      ("c0", cats(ABCDE)), ("c1", cats(ABCDE)), ("c2", cats(ABCDE))],
     rugged_mixed),
]


def check_points(n):
    """Deterministic points shared with the C++ side: a 64-bit LCG mapped onto each domain."""
    state = 12345
    out = []
    for name, space, f in OBJECTIVES:
        for _ in range(n):
            p = {}
            for pname, d in space:
                state = (state * 6364136223846793005 + 1442695040888963407) % (1 << 64)
                u = (state >> 11) / float(1 << 53)
                p[pname] = point_value(d, u)
            out.append((name, f(p)))
    return out


def point_value(d, u):
    if d[0] == "cat":
        return float(min(int(u * len(d[1])), len(d[1]) - 1))
    _, lo, hi, log, step = d
    if d[0] == "int":
        n = (hi - lo) // step
        return float(lo + min(int(u * (n + 1)), n) * step)
    if log:
        return math.exp(math.log(lo) + u * (math.log(hi) - math.log(lo)))
    return lo + u * (hi - lo)
