#pragma OPENCL EXTENSION cl_khr_fp64 : enable

/* bespoke_bstream_msplit_f64_b9e9afe7b2: bstream-msplit/x32-y2-c2
 * C <- 1*A*B + 0.5*C for a constant 3×4 operator A with 5 non-zeros (bstream-msplit/x32-y2-c2).
 * B is k×n and C is m×n, row-major with leading dimensions ldb and ldc; one thread per 1 column(s).
 * for each column j < n: C[i*ldc+j] = sum_r alpha*A[i][r]*B[r*ldb+j] + beta*C[i*ldc+j]
 */
__kernel __attribute__((reqd_work_group_size(32, 2, 1))) void bespoke_bstream_msplit_f64_b9e9afe7b2(__global const double* restrict b, __global double* restrict c)
{
    __local double bsh[128];
    int j = ((int)get_group_id(0)) * 32 + ((int)get_local_id(0));
    double acc0;
    double old0 = 0.0;
    double acc1;
    double old1 = 0.0;
    double pf0 = 0.0;
    if (((int)get_local_id(1)) == 0) {
        if (j < 100) {
            pf0 = b[j];
            old1 = c[100 + j];
        }
        bsh[((int)get_local_id(0))] = pf0;
    }
    if (((int)get_local_id(1)) == 1) {
        if (j < 100) {
            pf0 = b[100 + j];
        }
        bsh[32 + ((int)get_local_id(0))] = pf0;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (((int)get_local_id(1)) == 0) {
        if (j < 100) {
            pf0 = b[200 + j];
            old0 = c[j];
        }
        double s0 = bsh[((int)get_local_id(0))];
        acc0 = 1.5 * s0;
        double s1 = bsh[32 + ((int)get_local_id(0))];
        acc1 = 0.25 * s1;
        if (j < 100) {
            c[100 + j] = acc1 + 0.5 * old1;
        }
        bsh[64 + ((int)get_local_id(0))] = pf0;
    }
    if (((int)get_local_id(1)) == 1) {
        if (j < 100) {
            pf0 = b[300 + j];
            old0 = c[200 + j];
        }
        double s0 = bsh[((int)get_local_id(0))];
        acc0 = 3.0 * s0;
        bsh[96 + ((int)get_local_id(0))] = pf0;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (((int)get_local_id(1)) == 0) {
        double s0 = bsh[64 + ((int)get_local_id(0))];
        acc0 = acc0 - 2.0 * s0;
        if (j < 100) {
            c[j] = acc0 + 0.5 * old0;
        }
    }
    if (((int)get_local_id(1)) == 1) {
        double s1 = bsh[96 + ((int)get_local_id(0))];
        acc0 = acc0 + s1;
        if (j < 100) {
            c[200 + j] = acc0 + 0.5 * old0;
        }
    }
}
