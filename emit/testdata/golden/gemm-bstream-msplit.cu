
/* bespoke_bstream_msplit_f64_b9e9afe7b2: bstream-msplit/x32-y2-c2
 * C <- 1*A*B + 0.5*C for a constant 3×4 operator A with 5 non-zeros (bstream-msplit/x32-y2-c2).
 * B is k×n and C is m×n, row-major with leading dimensions ldb and ldc; one thread per 1 column(s).
 * for each column j < n: C[i*ldc+j] = sum_r alpha*A[i][r]*B[r*ldb+j] + beta*C[i*ldc+j]
 */
extern "C" __global__ void __launch_bounds__(64) bespoke_bstream_msplit_f64_b9e9afe7b2(const double* __restrict__ b, double* __restrict__ c)
{
    __shared__ double bsh[128];
    int j = ((int)blockIdx.x) * 32 + ((int)threadIdx.x);
    double acc0;
    double old0 = 0.0;
    double acc1;
    double old1 = 0.0;
    double pf0 = 0.0;
    if (((int)threadIdx.y) == 0) {
        if (j < 100) {
            pf0 = b[j];
            old1 = c[100 + j];
        }
        bsh[((int)threadIdx.x)] = pf0;
    }
    if (((int)threadIdx.y) == 1) {
        if (j < 100) {
            pf0 = b[100 + j];
        }
        bsh[32 + ((int)threadIdx.x)] = pf0;
    }
    __syncthreads();
    if (((int)threadIdx.y) == 0) {
        if (j < 100) {
            pf0 = b[200 + j];
            old0 = c[j];
        }
        double s0 = bsh[((int)threadIdx.x)];
        acc0 = 1.5 * s0;
        double s1 = bsh[32 + ((int)threadIdx.x)];
        acc1 = 0.25 * s1;
        if (j < 100) {
            c[100 + j] = acc1 + 0.5 * old1;
        }
        bsh[64 + ((int)threadIdx.x)] = pf0;
    }
    if (((int)threadIdx.y) == 1) {
        if (j < 100) {
            pf0 = b[300 + j];
            old0 = c[200 + j];
        }
        double s0 = bsh[((int)threadIdx.x)];
        acc0 = 3.0 * s0;
        bsh[96 + ((int)threadIdx.x)] = pf0;
    }
    __syncthreads();
    if (((int)threadIdx.y) == 0) {
        double s0 = bsh[64 + ((int)threadIdx.x)];
        acc0 = acc0 - 2.0 * s0;
        if (j < 100) {
            c[j] = acc0 + 0.5 * old0;
        }
    }
    if (((int)threadIdx.y) == 1) {
        double s1 = bsh[96 + ((int)threadIdx.x)];
        acc0 = acc0 + s1;
        if (j < 100) {
            c[200 + j] = acc0 + 0.5 * old0;
        }
    }
}
