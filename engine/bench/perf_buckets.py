#!/usr/bin/python3
"""perf_buckets.py: CPU-time shares of a punch-train profile by kind of work.

    perf record -e cpu-clock -F 1000 --call-graph dwarf,16384 -o P.data \\
        punch-bench-model JOB.json --infer-batch 0
    perf script -i P.data | /usr/bin/python3 engine/bench/perf_buckets.py

Each sample goes to one bucket by its leaf function and call chain (GEMM is
every OpenBLAS sgemm_* symbol, packing included; start-up and data loading
are left out), and GEMM samples are further split by the engine op that
issued them. Used for engine/bench/FINDINGS.md."""
import sys, collections, re
cat = collections.Counter(); op = collections.Counter(); n = 0
def classify(stack):
    leaf = stack[0]
    s = " ".join(stack)
    if any(k in s for k in ("dataset_load_all", "data_idx_load", "inflate", "model_init_params", "model_create", "backend_create", "spec_load")):
        return "startup (data load, init)"
    if leaf.startswith("sgemm") or leaf.startswith("cblas") or ("sgemm_" in s and ("memset" in leaf or "memmove" in leaf or "memcpy" in leaf)) or "gemm_thread" in s:
        return "GEMM (OpenBLAS incl. packing)"
    if "conv_im2col" in stack[:3] or "conv_col2im" in stack[:3]:
        return "im2col / col2im"
    if any("conv_direct" in f for f in stack[:3]):
        return "direct conv (own kernels)"
    if "optim_" in leaf or "adam" in leaf or any(f.startswith("optim_") for f in stack[:4]):
        return "optimizer (Adam)"
    if "model_load_batch" in s or "model_upload_batch" in s or "gather" in leaf:
        return "batch gather"
    if leaf in ("cpu_activate", "act_backward_row", "act_forward_rows", "act_backward_rows", "bias_grad_rows") or "dropout" in leaf:
        return "element-wise (bias, activation, dropout)"
    if leaf.startswith("conv_forward_chunk") or leaf.startswith("conv_backward_chunk") or leaf.startswith("conv_reduce"):
        return "element-wise (bias, activation, dropout)"
    if "pool_forward" in leaf or "pool_backward" in leaf or "pool2d" in leaf or "maxpool" in leaf:
        return "pooling"
    if "softmax" in s or "xent" in s or "metrics" in s or "model_loss" in s:
        return "loss + metrics"
    if leaf.startswith("pool_") or "futex" in s or "schedule" in s or "pthread" in leaf or leaf.startswith("[k]") or "lll_" in leaf or "finish_task_switch" in leaf or "spin" in leaf:
        return "thread pool sync / kernel"
    if "memset" in leaf or "memmove" in leaf or "memcpy" in leaf:
        return "memset/memcpy (other)"
    return "other: " + leaf
def which_op(stack):
    for f in stack:
        for key, name in (("conv_forward_chunk", "conv fwd"), ("conv_backward_chunk", "conv bwd"), ("conv_reduce", "conv bwd"),
                          ("cpu_dense_forward", "dense fwd"), ("cpu_dense_backward", "dense bwd"), ("pool", None)):
            if f.startswith(key) and name:
                return name
    return None
stack = []
gemm_op = collections.Counter()
for line in sys.stdin:
    line = line.rstrip("\n")
    if not line.strip():
        if stack:
            c = classify(stack)
            if c.startswith("startup"):
                stack = []
                continue
            if c.startswith("other"):
                c = "other"
            cat[c] += 1; n += 1
            if c.startswith("GEMM"):
                gemm_op[which_op(stack) or "dense (via pool chunk)"] += 1
        stack = []
        continue
    if line.startswith((" ", "\t")):
        parts = line.split()
        if len(parts) >= 2:
            sym = parts[1].split("+0x")[0]
            stack.append(sym)
for c, k in cat.most_common():
    print("%6.1f%%  %s" % (100.0 * k / n, c))
print("GEMM by op:", {k: "%.1f%%" % (100.0 * v / n) for k, v in gemm_op.most_common()})
print("samples", n)
