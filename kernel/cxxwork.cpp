// SPDX-License-Identifier: MIT
/* cxxwork.cpp: `work symbols`, in C++ and namespaced as the in-guest profiler this project began as. */
/*
 * The workload resolves pseudo-random addresses in the kernel's text against the symbol table
 * baked into the kernel (kernel/tools/mksymtab.sh), as that profiler's SymbolTable::Resolve did:
 * a binary search per address, the names it finds pushed into a small ring. Its functions are
 * C++ names a profiler must demangle -- a class's const member, a template's member, a function
 * in an anonymous namespace:
 *   prof::Walker::Run(int volatile*, unsigned long)          (the loop)
 *   prof::SymbolTable::Resolve(unsigned long) const           (the binary search: most samples)
 *   prof::Ring<unsigned long, 64u>::Push(unsigned long)       (the ring)
 *   prof::(anonymous namespace)::Mix(unsigned long)           (the address generator)
 * No exceptions, RTTI, static constructors or library: what a freestanding kernel can link.
 */
#include "cxxwork.h"

extern "C" {
extern const uint64_t symtab_count;
extern const uint64_t symtab_addr[];
extern const char __text_start[], __text_end[];
}

#define NOINLINE __attribute__((noipa)) /* no inlining, cloning or IPA-SRA: each keeps its own name */

namespace prof {

class SymbolTable {
public:
	SymbolTable(const uint64_t *addr, uint64_t count) : addr_(addr), count_(count) {}
	/* The index of the last symbol at or below pc, or -1. */
	NOINLINE long Resolve(uint64_t pc) const
	{
		uint64_t lo = 0, hi = count_;
		while (lo < hi) {
			uint64_t mid = lo + (hi - lo) / 2;
			if (addr_[mid] <= pc) lo = mid + 1;
			else hi = mid;
			__asm__ volatile("" : "+r"(lo), "+r"(hi));
		}
		return (long)lo - 1;
	}

private:
	const uint64_t *addr_;
	uint64_t count_;
};

template <typename T, unsigned N> class Ring {
public:
	NOINLINE void Push(T v)
	{
		slot_[head_ % N] = v;
		head_++;
		__asm__ volatile("" : : "r"(slot_) : "memory");
	}

private:
	T slot_[N] = {};
	unsigned head_ = 0;
};

namespace {
NOINLINE uint64_t Mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	__asm__ volatile("" : "+r"(x));
	return x;
}
} // namespace

class Walker {
public:
	Walker(const SymbolTable &table, uint64_t lo, uint64_t hi) : table_(table), lo_(lo), span_(hi - lo) {}
	NOINLINE void Run(volatile int *stop, uint64_t seed)
	{
		while (!*stop) {
			for (int i = 0; i < 256; i++) {
				seed = Mix(seed + 0x9e3779b97f4a7c15ull);
				for (int k = 0; k < 16; k++)
					found_.Push((uint64_t)table_.Resolve(lo_ + (seed + (uint64_t)k * 4099) % span_));
			}
		}
	}

private:
	const SymbolTable &table_;
	uint64_t lo_, span_;
	Ring<uint64_t, 64> found_;
};

} // namespace prof

extern "C" void work_symbols(volatile int *stop, uint64_t seed)
{
	prof::SymbolTable table(symtab_addr, symtab_count);
	prof::Walker walker(table, (uint64_t)__text_start, (uint64_t)__text_end);
	walker.Run(stop, seed);
}
