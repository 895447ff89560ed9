#pragma OPENCL EXTENSION cl_khr_fp64 : enable

/* bespoke_cstream_f64_b8ae27236e: cstream/x128-w2
 * C <- 1*A*B + 1*C for a constant 3×4 operator A with 5 non-zeros (cstream/x128-w2).
 * B is k×n and C is m×n, row-major with leading dimensions ldb and ldc; one thread per 2 column(s).
 * for each column j < n: C[i*ldc+j] = sum_r alpha*A[i][r]*B[r*ldb+j] + beta*C[i*ldc+j]
 */
__kernel __attribute__((reqd_work_group_size(128, 1, 1))) void bespoke_cstream_f64_b8ae27236e(long n, __global const double* restrict b, __global double* restrict c)
{
    if (((long)get_group_id(0)) * ((int)get_local_size(0)) + ((int)get_local_id(0)) >= (n + 1) / 2) return;
    long j = (((long)get_group_id(0)) * 128 + ((int)get_local_id(0))) * 2;
    if (j + 1 < n) {
        double b0_0;
        double b0_1;
        {
            const double2 _v = *(const __global double2*)(b + j);
            b0_0 = _v.s0;
            b0_1 = _v.s1;
        }
        double b2_0;
        double b2_1;
        {
            const double2 _v = *(const __global double2*)(b + (2000 + j));
            b2_0 = _v.s0;
            b2_1 = _v.s1;
        }
        double o0_0;
        double o0_1;
        {
            const double2 _v = *(const __global double2*)(c + j);
            o0_0 = _v.s0;
            o0_1 = _v.s1;
        }
        *(__global double2*)(c + j) = (double2)(1.5 * b0_0 - 2.0 * b2_0 + o0_0, 1.5 * b0_1 - 2.0 * b2_1 + o0_1);
        double b1_0;
        double b1_1;
        {
            const double2 _v = *(const __global double2*)(b + (1000 + j));
            b1_0 = _v.s0;
            b1_1 = _v.s1;
        }
        double o1_0;
        double o1_1;
        {
            const double2 _v = *(const __global double2*)(c + (1000 + j));
            o1_0 = _v.s0;
            o1_1 = _v.s1;
        }
        *(__global double2*)(c + (1000 + j)) = (double2)(0.25 * b1_0 + o1_0, 0.25 * b1_1 + o1_1);
        double b3_0;
        double b3_1;
        {
            const double2 _v = *(const __global double2*)(b + (3000 + j));
            b3_0 = _v.s0;
            b3_1 = _v.s1;
        }
        double o2_0;
        double o2_1;
        {
            const double2 _v = *(const __global double2*)(c + (2000 + j));
            o2_0 = _v.s0;
            o2_1 = _v.s1;
        }
        *(__global double2*)(c + (2000 + j)) = (double2)(3.0 * b0_0 + b3_0 + o2_0, 3.0 * b0_1 + b3_1 + o2_1);
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
