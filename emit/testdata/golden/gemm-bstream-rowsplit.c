#include <stdint.h>
#include <stdlib.h>

/* bespoke_bstream_msplit_f64_168344d17b: bstream-msplit/x32-y2
 * C <- 1*A*B + 0*C for a constant 3×4 operator A with 5 non-zeros (bstream-msplit/x32-y2).
 * B is k×n and C is m×n, row-major with leading dimensions ldb and ldc; one thread per 1 column(s).
 * for each column j < n: C[i*ldc+j] = sum_r alpha*A[i][r]*B[r*ldb+j] + beta*C[i*ldc+j]
 */
static void bespoke_bstream_msplit_f64_168344d17b_block(int64_t _g, int64_t n, const double* restrict b, int64_t ldb, double* restrict c, int64_t ldc)
{
    for (int64_t _ly = 0; _ly < 2; _ly++) {
        #pragma omp simd
        for (int64_t _lx = 0; _lx < 32; _lx++) {
            int64_t j = _g * 32 + _lx;
            if (_ly == 0) {
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
            if (_ly == 1) {
                if (j < n) {
                    double b0 = b[j];
                    double a2 = 3.0 * b0;
                    double b3 = b[3 * ldb + j];
                    a2 = a2 + b3;
                    c[2 * ldc + j] = a2;
                }
            }
        }
    }
}

void bespoke_bstream_msplit_f64_168344d17b(int64_t grid_x, int64_t n, const double* restrict b, int64_t ldb, double* restrict c, int64_t ldc)
{
    #pragma omp parallel for schedule(static)
    for (int64_t _g = 0; _g < grid_x; _g++)
        bespoke_bstream_msplit_f64_168344d17b_block(_g, n, b, ldb, c, ldc);
}
