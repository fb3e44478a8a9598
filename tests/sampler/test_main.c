/* SPDX-License-Identifier: MIT */
/* test_main.c: runs every sampler unit test file and prints "N passed, N failed". */
#include "check.h"

int check_passed, check_failed;

int main(void)
{
	test_rsp();
	test_arch();
	test_unwind();
	test_pace();
	test_capture();
	test_symbols();
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
	test_strict();
	test_output();
	test_top();
	test_topview();
	test_insn();
	test_progress();
	test_kallsyms();
	test_kcache();
	test_summary();
	test_messages();
	test_slice();
	test_hash();
	printf("%d passed, %d failed\n", check_passed, check_failed);
	return check_failed ? 1 : 0;
}
