
/* bespoke_cstream_msplit_f64_62b56ca7ce: cstream-msplit/x32-y3-g-w2
 * C <- 1*A*B + 1*C for a constant 3×4 operator A with 5 non-zeros (cstream-msplit/x32-y3-g-w2).
 * B is k×n and C is m×n, row-major with leading dimensions ldb and ldc; one thread per 2 column(s).
 * for each column j < n: C[i*ldc+j] = sum_r alpha*A[i][r]*B[r*ldb+j] + beta*C[i*ldc+j]
 */
extern "C" __global__ void __launch_bounds__(96) bespoke_cstream_msplit_f64_62b56ca7ce(const double* __restrict__ b, double* __restrict__ c)
{
    int j = (((int)blockIdx.x) * 32 + ((int)threadIdx.x)) * 2;
    if (((int)threadIdx.y) == 0) {
        if (j + 1 < 99) {
            double b0_0;
            double b0_1;
            {
                const double2 _v = *(const double2*)(b + j);
                b0_0 = _v.x;
                b0_1 = _v.y;
            }
            double b2_0;
            double b2_1;
            {
                const double2 _v = *(const double2*)(b + (200 + j));
                b2_0 = _v.x;
                b2_1 = _v.y;
            }
            double o0_0;
            double o0_1;
            {
                const double2 _v = *(const double2*)(c + j);
                o0_0 = _v.x;
                o0_1 = _v.y;
            }
            *(double2*)(c + j) = make_double2(1.5 * b0_0 - 2.0 * b2_0 + o0_0, 1.5 * b0_1 - 2.0 * b2_1 + o0_1);
        } else {
            if (j < 99) {
                double b0 = b[j];
                double b2 = b[200 + j];
                double o0 = c[j];
                c[j] = 1.5 * b0 - 2.0 * b2 + o0;
            }
        }
    }
    if (((int)threadIdx.y) == 1) {
        if (j + 1 < 99) {
            double b0_0;
            double b0_1;
            {
                const double2 _v = *(const double2*)(b + j);
                b0_0 = _v.x;
                b0_1 = _v.y;
            }
            double b3_0;
            double b3_1;
            {
                const double2 _v = *(const double2*)(b + (300 + j));
                b3_0 = _v.x;
                b3_1 = _v.y;
            }
            double o2_0;
            double o2_1;
            {
                const double2 _v = *(const double2*)(c + (204 + j));
                o2_0 = _v.x;
                o2_1 = _v.y;
            }
            *(double2*)(c + (204 + j)) = make_double2(3.0 * b0_0 + b3_0 + o2_0, 3.0 * b0_1 + b3_1 + o2_1);
        } else {
            if (j < 99) {
                double b0 = b[j];
                double b3 = b[300 + j];
                double o2 = c[204 + j];
                c[204 + j] = 3.0 * b0 + b3 + o2;
            }
        }
    }
    if (((int)threadIdx.y) == 2) {
        if (j + 1 < 99) {
            double b1_0;
            double b1_1;
            {
                const double2 _v = *(const double2*)(b + (100 + j));
                b1_0 = _v.x;
                b1_1 = _v.y;
            }
            double o1_0;
            double o1_1;
            {
                const double2 _v = *(const double2*)(c + (102 + j));
                o1_0 = _v.x;
                o1_1 = _v.y;
            }
            *(double2*)(c + (102 + j)) = make_double2(0.25 * b1_0 + o1_0, 0.25 * b1_1 + o1_1);
        } else {
            if (j < 99) {
                double b1 = b[100 + j];
                double o1 = c[102 + j];
                c[102 + j] = 0.25 * b1 + o1;
            }
        }
    }
}
