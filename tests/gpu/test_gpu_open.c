/* test_gpu_open.c — what a job asking for a GPU gets when there is none,
 * tested for real: in a build without CUDA every entry point refuses with
 * "built without CUDA support"; in a CUDA build on a machine without the
 * driver (libcuda.so.1 absent, as on this project's CI) the backend refuses
 * with exactly "no CUDA device: CUDA driver version is insufficient for
 * CUDA runtime version". On a machine with a working GPU the backend opens.
 * Runs in every build. */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gpu/gpu.h"
#ifdef PUNCH_HAVE_CUDA
#include "gpu/gpu_check.h"
#endif

#define NO_DRIVER "no CUDA device: CUDA driver version is insufficient for CUDA runtime version"

/* Whether the CUDA driver library can be loaded here at all. */
static bool driver_present(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return false;
    dlclose(h);
    return true;
}

static void test_without_cuda_build(void **state)
{
    (void)state;
    if (gpu_built())
        skip();
    char err[256] = "";
    assert_false(gpu_available(err, sizeof err));
    assert_string_equal(err, GPU_NO_CUDA_BUILD);
    strcpy(err, "");
    assert_null(backend_cuda_create(0, err, sizeof err));
    assert_string_equal(err, GPU_NO_CUDA_BUILD);
    strcpy(err, "");
    assert_null(gpu_backend_open(err, sizeof err));
    assert_string_equal(err, GPU_NO_CUDA_BUILD);
    strcpy(err, "");
    assert_null(gpu_comm_create(NULL, MPI_COMM_NULL, err, sizeof err));
    assert_string_equal(err, GPU_NO_CUDA_BUILD);
    spec_optimizer cfg = {.name = OPT_SGD, .learning_rate = 0.01};
    strcpy(err, "");
    assert_null(gpu_optim_create(NULL, &cfg, 10, err, sizeof err));
    assert_string_equal(err, GPU_NO_CUDA_BUILD);
}

static void test_cuda_build_without_driver(void **state)
{
    (void)state;
    if (!gpu_built() || driver_present())
        skip();
    char err[256] = "";
    assert_false(gpu_available(err, sizeof err));
    assert_string_equal(err, NO_DRIVER);
    /* Every local rank, and the environment-driven entry point, alike. */
    for (int rank = 0; rank < 3; rank++) {
        strcpy(err, "");
        assert_null(backend_cuda_create(rank, err, sizeof err));
        assert_string_equal(err, NO_DRIVER);
    }
    strcpy(err, "");
    assert_null(gpu_backend_open(err, sizeof err));
    assert_string_equal(err, NO_DRIVER);
}

static void test_cuda_build_with_driver(void **state)
{
    (void)state;
    if (!gpu_built() || !driver_present())
        skip();
    char why[256] = "", err[256] = "";
    if (!gpu_available(why, sizeof why)) {
        /* A driver but no usable device: the backend refuses the same way. */
        assert_true(strncmp(why, "no CUDA device: ", 16) == 0);
        assert_null(backend_cuda_create(0, err, sizeof err));
        assert_string_equal(err, why);
        return;
    }
    backend *be = backend_cuda_create(0, err, sizeof err);
    assert_non_null(be);
    assert_string_equal(be->name, "cuda");
    assert_false(be->host_memory);
    be->destroy(be);
}

#ifdef PUNCH_HAVE_CUDA
/* gpu_check_message() is what GPU_CHECK(call) at `line` of this file
 * reports with the library's message `why`. */
static void expect_check_message(const char *call, int line, const char *why)
{
    char want[512];
    snprintf(want, sizeof want, "%s failed at %s:%d: %s", call, __FILE__, line, why);
    assert_string_equal(gpu_check_message(), want);
}
#endif

/* The check macro names the call, the place and the right library's
 * message, whichever library the status comes from (here every call fails
 * for want of a driver). */
static void test_check_macro(void **state)
{
    (void)state;
#ifdef PUNCH_HAVE_CUDA
    if (driver_present())
        skip();
    int n = -1;
    int line = __LINE__ + 1;
    assert_false(GPU_CHECK(cudaGetDeviceCount(&n)));
    expect_check_message("cudaGetDeviceCount(&n)", line,
                         "CUDA driver version is insufficient for CUDA runtime version");

    cublasHandle_t blas = NULL;
    line = __LINE__ + 1;
    assert_false(GPU_CHECK(cublasCreate(&blas)));
    expect_check_message("cublasCreate(&blas)", line,
                         cublasGetStatusString(CUBLAS_STATUS_NOT_INITIALIZED));

    cudnnHandle_t dnn = NULL;
    cudnnStatus_t st = cudnnCreate(&dnn);
    assert_true(st != CUDNN_STATUS_SUCCESS);
    line = __LINE__ + 1;
    assert_false(GPU_CHECK(st));
    expect_check_message("st", line, cudnnGetErrorString(st));

    ncclResult_t bad = ncclInvalidArgument;
    line = __LINE__ + 1;
    assert_false(GPU_CHECK(bad));
    expect_check_message("bad", line, ncclGetErrorString(ncclInvalidArgument));
    cudaError_t fine = cudaSuccess;
    assert_true(GPU_CHECK(fine));
#else
    skip();
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_without_cuda_build),
        cmocka_unit_test(test_cuda_build_without_driver),
        cmocka_unit_test(test_cuda_build_with_driver),
        cmocka_unit_test(test_check_macro),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
