
/* bespoke_bstream_msplit_f64_168344d17b: bstream-msplit/x32-y2
 * C <- 1*A*B + 0*C for a constant 3×4 operator A with 5 non-zeros (bstream-msplit/x32-y2).
 * B is k×n and C is m×n, row-major with leading dimensions ldb and ldc; one thread per 1 column(s).
 * for each column j < n: C[i*ldc+j] = sum_r alpha*A[i][r]*B[r*ldb+j] + beta*C[i*ldc+j]
 */
extern "C" __global__ void __launch_bounds__(64) bespoke_bstream_msplit_f64_168344d17b(long long n, const double* __restrict__ b, long long ldb, double* __restrict__ c, long long ldc)
{
    long long j = ((long long)blockIdx.x) * 32 + ((int)threadIdx.x);
    if (((int)threadIdx.y) == 0) {
        if (j < n) {
            double b0 = b[j];
            double a0 = 1.5 * b0;
            double b1 = b[1 * ldb + j];
            double a1 = 0.25 * b1;
            c[1 * ldc + j] = a1;
            double b2 = b[2 * ldb + j];
            a0 = a0 - 2.0 * b2;
            c[j] = a0;
        }
    }
    if (((int)threadIdx.y) == 1) {
        if (j < n) {
            double b0 = b[j];
            double a2 = 3.0 * b0;
            double b3 = b[3 * ldb + j];
            a2 = a2 + b3;
            c[2 * ldc + j] = a2;
        }
    }
}
