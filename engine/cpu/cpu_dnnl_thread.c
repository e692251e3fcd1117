/* cpu_dnnl_thread.c — one OpenMP thread per pool thread for oneDNN calls
 * (the sgemm, the bf16 matmul and GELU all call it, so it sits below them). */
#include "cpu/cpu_dnnl_thread.h"

#include <stdbool.h>

#include <omp.h>

void cpu_dnnl_one_thread(void)
{
    static _Thread_local bool one_thread;
    if (!one_thread) {
        omp_set_num_threads(1);
        one_thread = true;
    }
}
