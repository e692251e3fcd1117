/* tensorfile_read.c — a weights file of either format, told apart by its
 * name (contract in tensorfile.h). Apart from tensorfile.c so that the
 * readers, which use tensorfile.c, are never called back from it. */
#include "io/tensorfile.h"

#include <string.h>

int tensorfile_read(const char *path, tensor_entry **out, int *n, char *err, size_t errlen)
{
    size_t len = strlen(path);
    if (len >= 4 && strcmp(path + len - 4, ".npz") == 0)
        return npz_read(path, out, n, err, errlen);
    return safetensors_read(path, out, n, err, errlen);
}
