/* fuzz_util.c — the helpers of fuzz.h: inputs as memory-backed files, a
 * null output stream, taking a choice byte off the input, and the check of
 * what a tensor file reader returns. */
#include "fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "io/tensorfile.h"

static void fuzz_die(const char *what)
{
    perror(what);
    abort();
}

const char *fuzz_file(int slot, const uint8_t *data, size_t size)
{
    static int fds[FUZZ_FILE_SLOTS] = {-1, -1};
    static char paths[FUZZ_FILE_SLOTS][32];
    if (slot < 0 || slot >= FUZZ_FILE_SLOTS)
        fuzz_die("fuzz_file: slot out of range");
    if (fds[slot] < 0) {
        fds[slot] = memfd_create("punch-fuzz", MFD_CLOEXEC);
        if (fds[slot] < 0)
            fuzz_die("fuzz_file: memfd_create");
        snprintf(paths[slot], sizeof paths[slot], "/proc/self/fd/%d", fds[slot]);
    }
    if (ftruncate(fds[slot], 0) != 0)
        fuzz_die("fuzz_file: ftruncate");
    size_t done = 0;
    while (done < size) {
        ssize_t n = pwrite(fds[slot], data + done, size - done, (off_t)done);
        if (n <= 0)
            fuzz_die("fuzz_file: pwrite");
        done += (size_t)n;
    }
    return paths[slot];
}

FILE *fuzz_null_stream(void)
{
    static FILE *null;
    if (null == NULL && (null = fopen("/dev/null", "w")) == NULL)
        fuzz_die("fuzz_null_stream: /dev/null");
    return null;
}

unsigned fuzz_take_byte(const uint8_t **data, size_t *size)
{
    if (*size == 0)
        return 0;
    unsigned b = **data;
    (*data)++;
    (*size)--;
    return b;
}

void fuzz_check_tensors(const tensor_entry *t, int n)
{
    volatile float sink = 0;
    for (int i = 0; i < n; i++) {
        if (t[i].rank < 0 || t[i].rank > TENSOR_MAX_RANK)
            abort();
        long count = tensor_entry_size(&t[i]);
        if (count < 0 || (count > 0 && t[i].data == NULL))
            abort();
        if (count > 0)
            sink += t[i].data[0] + t[i].data[count - 1];
    }
    (void)sink;
}
