/* SPDX-License-Identifier: MIT */
/* test_main.c: runs every sampler unit test file and prints "N passed, N failed". */
#include "check.h"

int check_passed, check_failed;

/* One entry point per test file. */
void test_rsp(void);
void test_unwind(void);
void test_pace(void);
void test_capture(void);
void test_arch(void);
void test_symbols(void);
void test_demangle(void);
void test_report(void);
void test_cli(void);
void test_sample(void);
void test_qmp(void);
void test_vmlinuz(void);
void test_orc(void);
void test_cfi(void);
void test_plan(void);
void test_gdb(void);
void test_guard(void);
void test_stats(void);
void test_kaslr(void);
void test_modules(void);
void test_kofile(void);
void test_task(void);
void test_taskdesc(void);
void test_taskdesc_dwarf(void);
void test_strict(void);
void test_output(void);
void test_top(void);
void test_topview(void);
void test_insn(void);
void test_progress(void);
void test_kallsyms(void);
void test_kcache(void);
void test_imgcache(void);
void test_summary(void);
void test_messages(void);
void test_slice(void);
void test_replay(void);
void test_hash(void);
void test_bpcount(void);
void test_phase(void);
void test_offcpu(void);
void test_offcpu_list(void);
void test_wirelog(void);

int main(void)
{
	test_rsp();
	test_arch();
	test_unwind();
	test_pace();
	test_capture();
	test_symbols();
	test_demangle();
	test_report();
	test_cli();
	test_sample();
	test_qmp();
	test_vmlinuz();
	test_orc();
	test_cfi();
	test_plan();
	test_gdb();
	test_guard();
	test_stats();
	test_kaslr();
	test_modules();
	test_kofile();
	test_task();
	test_taskdesc();
	test_taskdesc_dwarf();
	test_strict();
	test_output();
	test_top();
	test_topview();
	test_insn();
	test_progress();
	test_kallsyms();
	test_kcache();
	test_imgcache();
	test_summary();
	test_bpcount();
	test_phase();
	test_offcpu();
	test_offcpu_list();
	test_wirelog();
	test_messages();
	test_slice();
	test_replay();
	test_hash();
	return check_summary();
}
