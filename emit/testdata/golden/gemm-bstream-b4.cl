
/* bespoke_bstream_f32_058c9e7288: bstream/x128-b4
 * C <- 1*A*B + 0*C for a constant 3×4 operator A with 5 non-zeros (bstream/x128-b4).
 * B is k×n and C is m×n, row-major with leading dimensions ldb and ldc; one thread per 1 column(s).
 * for each column j < n: C[i*ldc+j] = sum_r alpha*A[i][r]*B[r*ldb+j] + beta*C[i*ldc+j]
 */
__kernel __attribute__((reqd_work_group_size(128, 1, 1))) void bespoke_bstream_f32_058c9e7288(long n, __global const float* restrict b, long ldb, __global float* restrict c, long ldc)
{
    if (((long)get_group_id(0)) * ((int)get_local_size(0)) + ((int)get_local_id(0)) >= n) return;
    long j = ((long)get_group_id(0)) * 128 + ((int)get_local_id(0));
    float b0 = b[j];
    float a0 = 1.5f * b0;
    float a2 = 3.0f * b0;
    float b1 = b[1 * ldb + j];
    float a1 = 0.25f * b1;
    c[1 * ldc + j] = a1;
    float b2 = b[2 * ldb + j];
    a0 = a0 - 2.0f * b2;
    c[j] = a0;
    float b3 = b[3 * ldb + j];
    a2 = a2 + b3;
    c[2 * ldc + j] = a2;
}
