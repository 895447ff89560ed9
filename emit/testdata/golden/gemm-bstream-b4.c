#include <stdint.h>
#include <stdlib.h>

/* bespoke_bstream_f32_058c9e7288: bstream/x128-b4
 * C <- 1*A*B + 0*C for a constant 3×4 operator A with 5 non-zeros (bstream/x128-b4).
 * B is k×n and C is m×n, row-major with leading dimensions ldb and ldc; one thread per 1 column(s).
 * for each column j < n: C[i*ldc+j] = sum_r alpha*A[i][r]*B[r*ldb+j] + beta*C[i*ldc+j]
 */
static void bespoke_bstream_f32_058c9e7288_block(int64_t _g, int64_t n, const float* restrict b, int64_t ldb, float* restrict c, int64_t ldc)
{
    int64_t _lim = n - _g * 128;
    if (_lim > 128) {
        _lim = 128;
    }
    #pragma omp simd
    for (int64_t _lx = 0; _lx < _lim; _lx++) {
        int64_t j = _g * 128 + _lx;
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
}

void bespoke_bstream_f32_058c9e7288(int64_t grid_x, int64_t n, const float* restrict b, int64_t ldb, float* restrict c, int64_t ldc)
{
    #pragma omp parallel for schedule(static)
    for (int64_t _g = 0; _g < grid_x; _g++)
        bespoke_bstream_f32_058c9e7288_block(_g, n, b, ldb, c, ldc);
}
