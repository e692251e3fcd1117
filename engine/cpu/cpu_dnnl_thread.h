/* cpu_dnnl_thread.h — how a pool thread calls oneDNN (cpu_dnnl_thread.c). */
#ifndef PUNCH_CPU_DNNL_THREAD_H
#define PUNCH_CPU_DNNL_THREAD_H

/* Sets the calling thread's OpenMP team to one thread, once per thread,
 * before it calls oneDNN: the engine's pool already gives each thread its
 * share, and OpenMP's spinning barriers collapse on a shared machine (an
 * OpenMP setting is per thread, and pool workers are plain pthreads). */
void cpu_dnnl_one_thread(void);

#endif
