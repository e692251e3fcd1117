/* spec_precision.c — training.precision: its names, and whether this CPU
 * has the bf16 instructions that make bf16 worth running (the parser
 * refuses it otherwise, unless training.allow_emulation). The check sits
 * in the spec library so that `punch submit --validate`, punchcardd and
 * punch-train refuse the same spec with the same message. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "jobspec/spec.h"

const char *spec_precision_name(spec_precision p)
{
    return p == PRECISION_BF16 ? "bf16" : "fp32";
}

#if defined(__x86_64__) || defined(__i386__)
/* XCR0 bits 5-7 (opmask, upper ZMM halves, ZMM16-31): the OS saves the
 * AVX-512 state, without which the instructions fault. */
static bool spec_os_saves_avx512(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) /* OSXSAVE */
        return false;
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (lo & 0xe6u) == 0xe6u;
}

static bool spec_cpuid_bf16(void)
{
    unsigned a, b, c, d;
    if (__get_cpuid_max(0, NULL) < 7 || !spec_os_saves_avx512())
        return false;
    __cpuid_count(7, 0, a, b, c, d);
    bool amx = d & (1u << 22);   /* AMX-BF16 */
    unsigned sub = a;            /* leaf 7's last subleaf */
    bool avx512 = false;
    if (sub >= 1) {
        __cpuid_count(7, 1, a, b, c, d);
        avx512 = a & (1u << 5);  /* AVX512_BF16 */
    }
    return avx512 || amx;
}
#endif

bool spec_cpu_has_bf16(void)
{
    const char *off = getenv("PUNCH_CPU_NO_BF16");
    if (off && *off && strcmp(off, "0") != 0)
        return false;
#if defined(__x86_64__) || defined(__i386__)
    return spec_cpuid_bf16();
#else
    return false;
#endif
}
