#include <stdint.h>
#include <stdlib.h>

/* bespoke_cstream_f64_b8ae27236e: cstream/x128-w2
 * C <- 1*A*B + 1*C for a constant 3×4 operator A with 5 non-zeros (cstream/x128-w2).
 * B is k×n and C is m×n, row-major with leading dimensions ldb and ldc; one thread per 2 column(s).
 * for each column j < n: C[i*ldc+j] = sum_r alpha*A[i][r]*B[r*ldb+j] + beta*C[i*ldc+j]
 */
static void bespoke_cstream_f64_b8ae27236e_block(int64_t _g, int64_t n, const double* restrict b, double* restrict c)
{
    int64_t _lim = (n + 1) / 2 - _g * 128;
    if (_lim > 128) {
        _lim = 128;
    }
    #pragma omp simd
    for (int64_t _lx = 0; _lx < _lim; _lx++) {
        int64_t j = (_g * 128 + _lx) * 2;
        if (j + 1 < n) {
            double b0_0;
            double b0_1;
            b0_0 = b[j];
            b0_1 = b[j + 1];
            double b2_0;
            double b2_1;
            b2_0 = b[2000 + j];
            b2_1 = b[2000 + j + 1];
            double o0_0;
            double o0_1;
            o0_0 = c[j];
            o0_1 = c[j + 1];
            c[j] = 1.5 * b0_0 - 2.0 * b2_0 + o0_0;
            c[j + 1] = 1.5 * b0_1 - 2.0 * b2_1 + o0_1;
            double b1_0;
            double b1_1;
            b1_0 = b[1000 + j];
            b1_1 = b[1000 + j + 1];
            double o1_0;
            double o1_1;
            o1_0 = c[1000 + j];
            o1_1 = c[1000 + j + 1];
            c[1000 + j] = 0.25 * b1_0 + o1_0;
            c[1000 + j + 1] = 0.25 * b1_1 + o1_1;
            double b3_0;
            double b3_1;
            b3_0 = b[3000 + j];
            b3_1 = b[3000 + j + 1];
            double o2_0;
            double o2_1;
            o2_0 = c[2000 + j];
            o2_1 = c[2000 + j + 1];
            c[2000 + j] = 3.0 * b0_0 + b3_0 + o2_0;
            c[2000 + j + 1] = 3.0 * b0_1 + b3_1 + o2_1;
        } else {
            double b0 = b[j];
            double b2 = b[2000 + j];
            double o0 = c[j];
            c[j] = 1.5 * b0 - 2.0 * b2 + o0;
            double b1 = b[1000 + j];
            double o1 = c[1000 + j];
            c[1000 + j] = 0.25 * b1 + o1;
            double b3 = b[3000 + j];
            double o2 = c[2000 + j];
            c[2000 + j] = 3.0 * b0 + b3 + o2;
        }
    }
}

void bespoke_cstream_f64_b8ae27236e(int64_t grid_x, int64_t n, const double* restrict b, double* restrict c)
{
    #pragma omp parallel for schedule(static)
    for (int64_t _g = 0; _g < grid_x; _g++)
        bespoke_cstream_f64_b8ae27236e_block(_g, n, b, c);
}
