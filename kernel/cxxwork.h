/* SPDX-License-Identifier: MIT */
/* cxxwork.h: the C side's view of the one workload written in C++ (kernel/cxxwork.cpp). */
#ifndef CXXWORK_H
#define CXXWORK_H
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif
/* work symbols: resolve pseudo-random text addresses against the kernel's own symbol table
 * until *stop; seed picks the addresses. */
void work_symbols(volatile int *stop, uint64_t seed);
#ifdef __cplusplus
}
#endif
#endif
