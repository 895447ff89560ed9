#include <stdint.h>
#include <stdlib.h>

/* bespoke_cstream_msplit_f64_62b56ca7ce: cstream-msplit/x32-y3-g-w2
 * C <- 1*A*B + 1*C for a constant 3×4 operator A with 5 non-zeros (cstream-msplit/x32-y3-g-w2).
 * B is k×n and C is m×n, row-major with leading dimensions ldb and ldc; one thread per 2 column(s).
 * for each column j < n: C[i*ldc+j] = sum_r alpha*A[i][r]*B[r*ldb+j] + beta*C[i*ldc+j]
 */
struct bespoke_cstream_msplit_f64_62b56ca7ce_ctx {
    int64_t j[3][32];
};

static void bespoke_cstream_msplit_f64_62b56ca7ce_block(int64_t _g, struct bespoke_cstream_msplit_f64_62b56ca7ce_ctx *restrict _c, const double* restrict b, double* restrict c)
{
    for (int64_t _ly = 0; _ly < 3; _ly++) {
        #pragma omp simd
        for (int64_t _lx = 0; _lx < 32; _lx++) {
            _c->j[_ly][_lx] = (_g * 32 + _lx) * 2;
            if (_ly == 0) {
                if (_c->j[_ly][_lx] + 1 < 99) {
                    double b0_0;
                    double b0_1;
                    b0_0 = b[_c->j[_ly][_lx]];
                    b0_1 = b[_c->j[_ly][_lx] + 1];
                    double b2_0;
                    double b2_1;
                    b2_0 = b[200 + _c->j[_ly][_lx]];
                    b2_1 = b[200 + _c->j[_ly][_lx] + 1];
                    double o0_0;
                    double o0_1;
                    o0_0 = c[_c->j[_ly][_lx]];
                    o0_1 = c[_c->j[_ly][_lx] + 1];
                    c[_c->j[_ly][_lx]] = 1.5 * b0_0 - 2.0 * b2_0 + o0_0;
                    c[_c->j[_ly][_lx] + 1] = 1.5 * b0_1 - 2.0 * b2_1 + o0_1;
                } else {
                    if (_c->j[_ly][_lx] < 99) {
                        double b0 = b[_c->j[_ly][_lx]];
                        double b2 = b[200 + _c->j[_ly][_lx]];
                        double o0 = c[_c->j[_ly][_lx]];
                        c[_c->j[_ly][_lx]] = 1.5 * b0 - 2.0 * b2 + o0;
                    }
                }
            }
            if (_ly == 1) {
                if (_c->j[_ly][_lx] + 1 < 99) {
                    double b0_0;
                    double b0_1;
                    b0_0 = b[_c->j[_ly][_lx]];
                    b0_1 = b[_c->j[_ly][_lx] + 1];
                    double b3_0;
                    double b3_1;
                    b3_0 = b[300 + _c->j[_ly][_lx]];
                    b3_1 = b[300 + _c->j[_ly][_lx] + 1];
                    double o2_0;
                    double o2_1;
                    o2_0 = c[204 + _c->j[_ly][_lx]];
                    o2_1 = c[204 + _c->j[_ly][_lx] + 1];
                    c[204 + _c->j[_ly][_lx]] = 3.0 * b0_0 + b3_0 + o2_0;
                    c[204 + _c->j[_ly][_lx] + 1] = 3.0 * b0_1 + b3_1 + o2_1;
                } else {
                    if (_c->j[_ly][_lx] < 99) {
                        double b0 = b[_c->j[_ly][_lx]];
                        double b3 = b[300 + _c->j[_ly][_lx]];
                        double o2 = c[204 + _c->j[_ly][_lx]];
                        c[204 + _c->j[_ly][_lx]] = 3.0 * b0 + b3 + o2;
                    }
                }
            }
            if (_ly == 2) {
                if (_c->j[_ly][_lx] + 1 < 99) {
                    double b1_0;
                    double b1_1;
                    b1_0 = b[100 + _c->j[_ly][_lx]];
                    b1_1 = b[100 + _c->j[_ly][_lx] + 1];
                    double o1_0;
                    double o1_1;
                    o1_0 = c[102 + _c->j[_ly][_lx]];
                    o1_1 = c[102 + _c->j[_ly][_lx] + 1];
                    c[102 + _c->j[_ly][_lx]] = 0.25 * b1_0 + o1_0;
                    c[102 + _c->j[_ly][_lx] + 1] = 0.25 * b1_1 + o1_1;
                } else {
                    if (_c->j[_ly][_lx] < 99) {
                        double b1 = b[100 + _c->j[_ly][_lx]];
                        double o1 = c[102 + _c->j[_ly][_lx]];
                        c[102 + _c->j[_ly][_lx]] = 0.25 * b1 + o1;
                    }
                }
            }
        }
    }
}

void bespoke_cstream_msplit_f64_62b56ca7ce(int64_t grid_x, const double* restrict b, double* restrict c)
{
    #pragma omp parallel
    {
        struct bespoke_cstream_msplit_f64_62b56ca7ce_ctx *_c = malloc(sizeof *_c);
        if (!_c) abort();
        #pragma omp for schedule(static)
        for (int64_t _g = 0; _g < grid_x; _g++)
            bespoke_cstream_msplit_f64_62b56ca7ce_block(_g, _c, b, c);
        free(_c);
    }
}
