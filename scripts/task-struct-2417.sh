#!/usr/bin/env bash
# Prints the offsets of the task_struct, mm_struct and thread_struct fields that 2.4's scheduler
# paths touch, as gcc lays them out for i386 with CONFIG_SMP (NR_CPUS 32) and the debugging
# options off: the source of crates/schedkit/src/policy/goodness/task_struct.rs.
#
#   scripts/task-struct-2417.sh LINUX-2.4.17-TREE
#
# LINUX-2.4.17-TREE is an unpacked Linux 2.4.17 source (kernel.org's linux-2.4.17.tar.bz2, or
# the "Original Linux 2.4.17" commit 34b673e of github.com/rickgaiser/linux-2.4.17-ps2). Its
# include/ is copied to a temporary directory; three declarations that a current gcc refuses
# (an extern array of an incomplete struct, two prototypes redeclared with another calling
# convention) are rewritten there, none of them a member of a structure measured. Needs gcc
# with -m32 code generation (only compilation to assembly: no 32-bit libraries).
set -euo pipefail
tree=${1:?usage: task-struct-2417.sh LINUX-2.4.17-TREE}
[[ -f $tree/include/linux/sched.h && -d $tree/include/asm-i386 ]] || {
  echo "task-struct-2417.sh: $tree has no include/linux/sched.h and include/asm-i386" >&2; exit 1; }
grep -q 'offset 32 begins here' "$tree/include/linux/sched.h" || {
  echo "task-struct-2417.sh: $tree/include/linux/sched.h is not a 2.4 task_struct" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$tree/include" "$work/include"
cd "$work/include"
ln -sfn asm-i386 asm
cat > linux/autoconf.h <<'EOF'
#define CONFIG_X86 1
#define CONFIG_SMP 1
#define CONFIG_M686 1
#define CONFIG_X86_L1_CACHE_SHIFT 5
#define CONFIG_X86_TSC 1
#define CONFIG_X86_GOOD_APIC 1
#define CONFIG_X86_LOCAL_APIC 1
#define CONFIG_X86_IO_APIC 1
#define CONFIG_NOHIGHMEM 1
#define CONFIG_RWSEM_XCHGADD_ALGORITHM 1
#define CONFIG_X86_CMPXCHG 1
#define CONFIG_X86_XADD 1
#define CONFIG_X86_BSWAP 1
#define CONFIG_X86_POPAD_OK 1
#define CONFIG_X86_PGE 1
EOF
sed -i 's/^extern struct tss_struct init_tss\[NR_CPUS\];/struct tss_struct; extern struct tss_struct *init_tss_unused;/' asm-i386/processor.h
sed -i 's/^extern int printk(const char \* fmt, \.\.\.)/extern asmlinkage int printk(const char * fmt, ...)/' asm-i386/spinlock.h
sed -i 's/^extern void FASTCALL(smp_send_reschedule(int cpu));/extern void FASTCALL(smp_send_reschedule_unused(int cpu));/' linux/smp.h
cd "$work"
cat > off.c <<'EOF'
#include <linux/sched.h>
#include <linux/kernel_stat.h>
#define O(s, f) int off_##s##__##f = __builtin_offsetof(struct s, f);
O(task_struct, state) O(task_struct, flags) O(task_struct, need_resched)
O(task_struct, counter) O(task_struct, nice) O(task_struct, policy) O(task_struct, mm)
O(task_struct, processor) O(task_struct, cpus_runnable) O(task_struct, cpus_allowed)
O(task_struct, run_list) O(task_struct, sleep_time) O(task_struct, next_task)
O(task_struct, active_mm) O(task_struct, rt_priority) O(task_struct, thread)
O(task_struct, alloc_lock)
O(thread_struct, esp0) O(thread_struct, eip) O(thread_struct, esp) O(thread_struct, fs)
O(thread_struct, gs) O(thread_struct, debugreg) O(thread_struct, ioperm)
O(mm_struct, pgd) O(mm_struct, mm_count) O(mm_struct, cpu_vm_mask) O(mm_struct, context)
O(kernel_stat, context_swtch)
int size_task_struct = sizeof(struct task_struct);
int size_thread_struct = sizeof(struct thread_struct);
int size_mm_struct = sizeof(struct mm_struct);
EOF
gcc -m32 -std=gnu89 -D__KERNEL__ -O0 -w -Iinclude -S off.c -o off.s
# Each variable's label is followed by its value (.long N, or .zero 4 for 0).
awk '/^(off|size)_[a-z0-9_]+:/ { name = substr($1, 1, length($1) - 1); next }
     name != "" && /\.(long|zero)/ { v = ($1 == ".zero") ? 0 : $2; sub(/^off_/, "", name);
       sub(/__/, ".", name); printf "%-28s %5d\n", name, v; name = "" }' off.s
