
/* bespoke_cstream_ksplit_f32_b8172f6012: cstream-ksplit/x32-y2-c2
 * C <- 1*A*B + 0*C for a constant 3×4 operator A with 5 non-zeros (cstream-ksplit/x32-y2-c2).
 * B is k×n and C is m×n, row-major with leading dimensions ldb and ldc; one thread per 1 column(s).
 * for each column j < n: C[i*ldc+j] = sum_r alpha*A[i][r]*B[r*ldb+j] + beta*C[i*ldc+j]
 */
__kernel __attribute__((reqd_work_group_size(32, 2, 1))) void bespoke_cstream_ksplit_f32_b8172f6012(long n, __global const float* restrict b, long ldb, __global float* restrict c, long ldc)
{
    __local float psh[256];
    long j = ((long)get_group_id(0)) * 32 + ((int)get_local_id(0));
    float bv0;
    float bv1;
    if (((int)get_local_id(1)) == 0) {
        if (j < n) {
            bv0 = b[j];
            bv1 = b[1 * ldb + j];
        }
    }
    if (((int)get_local_id(1)) == 1) {
        if (j < n) {
            bv0 = b[2 * ldb + j];
            bv1 = b[3 * ldb + j];
        }
    }
    if (((int)get_local_id(1)) == 0) {
        psh[((int)get_local_id(0))] = 1.5f * bv0;
        psh[32 + ((int)get_local_id(0))] = 0.25f * bv1;
    }
    if (((int)get_local_id(1)) == 1) {
        psh[64 + ((int)get_local_id(0))] = -2.0f * bv0;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (((int)get_local_id(1)) == 0) {
        if (j < n) {
            c[j] = psh[((int)get_local_id(0))] + psh[64 + ((int)get_local_id(0))];
        }
    }
    if (((int)get_local_id(1)) == 1) {
        if (j < n) {
            c[1 * ldc + j] = psh[32 + ((int)get_local_id(0))];
        }
    }
    if (((int)get_local_id(1)) == 0) {
        psh[128 + ((int)get_local_id(0))] = 3.0f * bv0;
    }
    if (((int)get_local_id(1)) == 1) {
        psh[192 + ((int)get_local_id(0))] = bv1;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (((int)get_local_id(1)) == 0) {
        if (j < n) {
            c[2 * ldc + j] = psh[128 + ((int)get_local_id(0))] + psh[192 + ((int)get_local_id(0))];
        }
    }
}
