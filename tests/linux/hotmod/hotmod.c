// SPDX-License-Identifier: MIT
/*
 * hotmod.c: gdbsample's out-of-tree test module -- a hot function chain of known depth in module
 * code, reached from a read() of /proc/hotmod and, with kthread=1, from a kernel thread.
 *
 *   read(2) -> ... -> proc_reg_read -> hotmod_read -> hotmod_work -> hotmod_spin   (syscall)
 *   ret_from_fork -> kthread -> hotmod_thread -> hotmod_work -> hotmod_spin           (kthread=1)
 *
 * Every function of the chain is noinline and uses its callee's result after the call, so the
 * compiler can neither inline nor tail-call it away: each is one frame on the stack. A read never
 * reaches end of file (dd if=/proc/hotmod keeps reading), and each read spins `spin` rounds of a
 * xorshift in hotmod_spin before it copies a short line out, so most of the reader's time is in
 * hotmod_spin. Built by tools/linuxguest.py against Debian's linux-headers package.
 */
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/proc_fs.h>
#include <linux/sched.h>
#include <linux/uaccess.h>

static unsigned int spin = 200000;   /* xorshift rounds per read (and per kthread round) */
module_param(spin, uint, 0644);
MODULE_PARM_DESC(spin, "xorshift rounds per read");
static bool kthread;                 /* also spin in a kernel thread, hotmod_kthread */
module_param(kthread, bool, 0444);
MODULE_PARM_DESC(kthread, "start a kernel thread that spins too");

static struct proc_dir_entry *entry;
static struct task_struct *thread;
static u64 total;                    /* results, so the work cannot be optimized out */

/* The leaf: pure computation, no calls. */
static noinline u64 hotmod_spin(u64 x, unsigned int rounds)
{
	unsigned int i;

	for (i = 0; i < rounds; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
	}
	return x;
}

/* The middle frame: its result is used after the call (no tail call). */
static noinline u64 hotmod_work(u64 seed)
{
	u64 x = hotmod_spin(seed | 1, READ_ONCE(spin));

	WRITE_ONCE(total, READ_ONCE(total) + x);
	return x ^ seed;
}

static noinline ssize_t hotmod_read(struct file *file, char __user *buf, size_t count, loff_t *ppos)
{
	char line[32];
	int n = scnprintf(line, sizeof(line), "hotmod %016llx\n", hotmod_work(get_cycles()));

	if (count < n)
		n = count;
	if (copy_to_user(buf, line, n))
		return -EFAULT;
	return n;                        /* never 0: no end of file */
}

static const struct proc_ops hotmod_ops = {
	.proc_read = hotmod_read,
	.proc_lseek = noop_llseek,
};

static noinline int hotmod_thread(void *unused)
{
	u64 x = 1;

	while (!kthread_should_stop()) {
		x = hotmod_work(x);
		cond_resched();
	}
	return (int)(x & 1);
}

static int __init hotmod_init(void)
{
	entry = proc_create("hotmod", 0444, NULL, &hotmod_ops);
	if (!entry)
		return -ENOMEM;
	if (kthread) {
		thread = kthread_run(hotmod_thread, NULL, "hotmod_kthread");
		if (IS_ERR(thread)) {
			proc_remove(entry);
			return PTR_ERR(thread);
		}
	}
	return 0;
}

static void __exit hotmod_exit(void)
{
	if (thread)
		kthread_stop(thread);
	proc_remove(entry);
}

module_init(hotmod_init);
module_exit(hotmod_exit);
MODULE_LICENSE("Dual MIT/GPL");
MODULE_DESCRIPTION("gdbsample test module: a hot chain of known depth in module code");
