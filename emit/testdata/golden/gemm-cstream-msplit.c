#include <stdint.h>
#include <stdlib.h>

/* bespoke_cstream_msplit_f64_62b56ca7ce: cstream-msplit/x32-y3-g-w2
 * C <- 1*A*B + 1*C for a constant 3×4 operator A with 5 non-zeros (cstream-msplit/x32-y3-g-w2).
 * B is k×n and C is m×n, row-major with leading dimensions ldb and ldc; one thread per 2 column(s).
 * for each column j < n: C[i*ldc+j] = sum_r alpha*A[i][r]*B[r*ldb+j] + beta*C[i*ldc+j]
 */
static void bespoke_cstream_msplit_f64_62b56ca7ce_block(int64_t _g, const double* restrict b, double* restrict c)
{
    for (int64_t _ly = 0; _ly < 3; _ly++) {
        #pragma omp simd
        for (int64_t _lx = 0; _lx < 32; _lx++) {
            int64_t j = (_g * 32 + _lx) * 2;
            if (_ly == 0) {
                if (j + 1 < 99) {
                    double b0_0;
                    double b0_1;
                    b0_0 = b[j];
                    b0_1 = b[j + 1];
                    double b2_0;
                    double b2_1;
                    b2_0 = b[200 + j];
                    b2_1 = b[200 + j + 1];
                    double o0_0;
                    double o0_1;
                    o0_0 = c[j];
                    o0_1 = c[j + 1];
                    c[j] = 1.5 * b0_0 - 2.0 * b2_0 + o0_0;
                    c[j + 1] = 1.5 * b0_1 - 2.0 * b2_1 + o0_1;
                } else {
                    if (j < 99) {
                        double b0 = b[j];
                        double b2 = b[200 + j];
                        double o0 = c[j];
                        c[j] = 1.5 * b0 - 2.0 * b2 + o0;
                    }
                }
            }
            if (_ly == 1) {
                if (j + 1 < 99) {
                    double b0_0;
                    double b0_1;
                    b0_0 = b[j];
                    b0_1 = b[j + 1];
                    double b3_0;
                    double b3_1;
                    b3_0 = b[300 + j];
                    b3_1 = b[300 + j + 1];
                    double o2_0;
                    double o2_1;
                    o2_0 = c[204 + j];
                    o2_1 = c[204 + j + 1];
                    c[204 + j] = 3.0 * b0_0 + b3_0 + o2_0;
                    c[204 + j + 1] = 3.0 * b0_1 + b3_1 + o2_1;
                } else {
                    if (j < 99) {
                        double b0 = b[j];
                        double b3 = b[300 + j];
                        double o2 = c[204 + j];
                        c[204 + j] = 3.0 * b0 + b3 + o2;
                    }
                }
            }
            if (_ly == 2) {
                if (j + 1 < 99) {
                    double b1_0;
                    double b1_1;
                    b1_0 = b[100 + j];
                    b1_1 = b[100 + j + 1];
                    double o1_0;
                    double o1_1;
                    o1_0 = c[102 + j];
                    o1_1 = c[102 + j + 1];
                    c[102 + j] = 0.25 * b1_0 + o1_0;
                    c[102 + j + 1] = 0.25 * b1_1 + o1_1;
                } else {
                    if (j < 99) {
                        double b1 = b[100 + j];
                        double o1 = c[102 + j];
                        c[102 + j] = 0.25 * b1 + o1;
                    }
                }
            }
        }
    }
}

void bespoke_cstream_msplit_f64_62b56ca7ce(int64_t grid_x, const double* restrict b, double* restrict c)
{
    #pragma omp parallel for schedule(static)
    for (int64_t _g = 0; _g < grid_x; _g++)
        bespoke_cstream_msplit_f64_62b56ca7ce_block(_g, b, c);
}
