#!/usr/bin/env bash
# nccl_two_ranks.sh TEST_GPU_NCCL — runs the NCCL averaging test on two
# ranks, one GPU each; skipped (77, with the reason) where fewer than two
# devices are usable.
set -euo pipefail
test_bin=$1

set +e
"$test_bin" --probe
probe=$?
set -e
[ "$probe" -eq 0 ] || exit "$probe"

# NCCL's bootstrap over loopback on one host.
export NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo}
exec mpirun -np 2 -x NCCL_SOCKET_IFNAME "$test_bin"
