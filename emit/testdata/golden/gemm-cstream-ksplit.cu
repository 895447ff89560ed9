
/* bespoke_cstream_ksplit_f32_b8172f6012: cstream-ksplit/x32-y2-c2
 * C <- 1*A*B + 0*C for a constant 3×4 operator A with 5 non-zeros (cstream-ksplit/x32-y2-c2).
 * B is k×n and C is m×n, row-major with leading dimensions ldb and ldc; one thread per 1 column(s).
 * for each column j < n: C[i*ldc+j] = sum_r alpha*A[i][r]*B[r*ldb+j] + beta*C[i*ldc+j]
 */
extern "C" __global__ void __launch_bounds__(64) bespoke_cstream_ksplit_f32_b8172f6012(long long n, const float* __restrict__ b, long long ldb, float* __restrict__ c, long long ldc)
{
    __shared__ float psh[256];
    long long j = ((long long)blockIdx.x) * 32 + ((int)threadIdx.x);
    float bv0;
    float bv1;
    if (((int)threadIdx.y) == 0) {
        if (j < n) {
            bv0 = b[j];
            bv1 = b[1 * ldb + j];
        }
    }
    if (((int)threadIdx.y) == 1) {
        if (j < n) {
            bv0 = b[2 * ldb + j];
            bv1 = b[3 * ldb + j];
        }
    }
    if (((int)threadIdx.y) == 0) {
        psh[((int)threadIdx.x)] = 1.5f * bv0;
        psh[32 + ((int)threadIdx.x)] = 0.25f * bv1;
    }
    if (((int)threadIdx.y) == 1) {
        psh[64 + ((int)threadIdx.x)] = -2.0f * bv0;
    }
    __syncthreads();
    if (((int)threadIdx.y) == 0) {
        if (j < n) {
            c[j] = psh[((int)threadIdx.x)] + psh[64 + ((int)threadIdx.x)];
        }
    }
    if (((int)threadIdx.y) == 1) {
        if (j < n) {
            c[1 * ldc + j] = psh[32 + ((int)threadIdx.x)];
        }
    }
    if (((int)threadIdx.y) == 0) {
        psh[128 + ((int)threadIdx.x)] = 3.0f * bv0;
    }
    if (((int)threadIdx.y) == 1) {
        psh[192 + ((int)threadIdx.x)] = bv1;
    }
    __syncthreads();
    if (((int)threadIdx.y) == 0) {
        if (j < n) {
            c[2 * ldc + j] = psh[128 + ((int)threadIdx.x)] + psh[192 + ((int)threadIdx.x)];
        }
    }
}
