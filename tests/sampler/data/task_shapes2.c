/* SPDX-License-Identifier: MIT */
/* task_shapes2.c: the unit defining the struct task_shapes.c only declares (a header's `struct task2;`). */
struct task2 { long flags; int id; char label[8]; };
struct task2 one_task2;
