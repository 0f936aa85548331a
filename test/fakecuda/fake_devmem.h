/* SPDX-License-Identifier: BSD-3-Clause */
// fake_devmem.h - device memory in use, counted across every process of the machine
// (fake_cuda.cc), so that cuMemGetInfo answers for the whole GPU as the real one does:
// several ranks share a GPU, and one rank's free memory drops when another allocates.
//
// The counts live in a small shared file, /dev/shm/fakecuda-<uid>-<node>-dev<N>: one
// slot per process (pid, bytes). A slot of a process that is gone counts nothing (its
// memory went with it, as the real driver frees a dead process's memory).
// FAKECUDA_NODE (default "0") names the "machine", so that test runs that must not
// see each other's usage can pick different names.
#ifndef STRATA_FAKECUDA_DEVMEM_H
#define STRATA_FAKECUDA_DEVMEM_H

namespace fakecuda {

// Adds delta bytes (negative to give back) to this process's use of device dev.
void devmem_add(int dev, long long delta);
// Bytes of device dev in use by every live process; 0 if the file cannot be used.
unsigned long long devmem_used(int dev);

}  // namespace fakecuda

#endif
