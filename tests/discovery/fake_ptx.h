/* The fake driver's PTX "JIT": parses the subset of PTX that
 * src/readiness/gpu_kernels.ptx is written in and runs a kernel one thread
 * at a time on the CPU, so the test suite runs the very text the real driver
 * compiles, and the coordinator's recomputed checksum checks its meaning.
 *
 * Anything outside the subset is refused with the line it is on, as a driver
 * refuses PTX it cannot compile: a kernel edited to use more must extend this
 * interpreter too, or its tests fail. Not thread-safe; the fake is called from
 * one thread. */
#pragma once
#include <stddef.h>
#include <stdint.h>

struct FakePtxModule;
struct FakePtxKernel;

/* Parses `text`. NULL on failure, with why in `error`. `max_isa` (e.g. 70
 * for 7.0) is the newest `.version` accepted; newer gives *unsupported = 1. */
struct FakePtxModule* FakePtxLoad(const char* text, int max_isa, int* unsupported, char* error, size_t error_size);
void FakePtxUnload(struct FakePtxModule* module);

/* The entry named `name`, or NULL. */
const struct FakePtxKernel* FakePtxFind(const struct FakePtxModule* module, const char* name);

/* Translates a device address to host memory holding at least `bytes`
 * bytes, or NULL when it is not inside an allocation. */
typedef void* (*FakePtxTranslate)(uint64_t address, size_t bytes);

/* Runs `kernel` over grid x block threads (1-D) with the cuLaunchKernel
 * parameters `params`. 0 on success; otherwise -1 with why in `error`. */
int FakePtxRun(const struct FakePtxKernel* kernel, unsigned grid, unsigned block, void** params,
               FakePtxTranslate translate, char* error, size_t error_size);
