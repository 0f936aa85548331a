#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The segment-size sweep of perf/results/h200-2026-12-04-segments.txt: run on a GPU machine
# from the repository root, with .carry/ made by contrib/device-check --pack and Open
# MPI's runtime debs in .carry/openmpi-debs; strata_bench under MPS at 2 and 8 ranks.
set -u
src=$(pwd); b=$src/.carry/build
prefix=$(mktemp -d); for f in .carry/openmpi-debs/*.deb; do dpkg -x $f $prefix; done
export OPAL_PREFIX=$prefix/usr PATH=$prefix/usr/bin:$PATH
export LD_LIBRARY_PATH=$prefix/usr/lib/x86_64-linux-gnu:$prefix/usr/lib/x86_64-linux-gnu/openmpi/lib
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 PMIX_MCA_pcompress_base_silence_warning=1
command -v ssh >/dev/null || export OMPI_MCA_plm=isolated
cp=$prefix/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3:$b/.libs
export CUDA_MPS_PIPE_DIRECTORY=${TMPDIR:-/tmp}/mps-pipe CUDA_MPS_LOG_DIRECTORY=${TMPDIR:-/tmp}/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d
for np in 2 8; do
  emax=256M; [ $np = 8 ] && emax=64M
  for seg in 1M 4M 16M 64M; do
    s=$(numfmt --from=iec $seg)
    for coll in allreduce allgather; do
      echo "=== np=$np seg=$seg $coll"
      timeout 25 mpirun.openmpi -np $np --oversubscribe --bind-to none --mca mpi_yield_when_idle 1 \
        --mca mca_base_component_path $cp --mca coll_strata_segment_size $s -x CUDA_MPS_PIPE_DIRECTORY \
        $b/perf/strata_bench --device -c $coll -b 1M -e $emax -f 4 -w 2 -n 5 2>&1 | grep -E '^ +[0-9]|roofline|rror'
    done
  done
done
echo "=== np=2 small, seg 4M, 20 warmups"
timeout 40 mpirun.openmpi -np 2 --oversubscribe --bind-to none --mca mca_base_component_path $cp -x CUDA_MPS_PIPE_DIRECTORY \
  $b/perf/strata_bench --device -c allreduce -b 8 -e 64K -f 8 -w 20 -n 50 2>&1 | grep -E '^ +[0-9]|rror'
echo quit | nvidia-cuda-mps-control
