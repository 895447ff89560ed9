#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
inline void bespoke_atomic_add_f64(volatile __global double *p, double v)
{
    ulong old = as_ulong(*p), seen;
    do {
        seen = old;
        old = atom_cmpxchg((volatile __global ulong *)p, seen, as_ulong(as_double(seen) + v));
    } while (old != seen);
}

/* misc_f64: sample
 * a sample of the IR's other statements
 */
__kernel __attribute__((reqd_work_group_size(4, 1, 1))) void misc_f64(int n, __global const int* restrict to, __global const double* restrict x, __global double* restrict y)
{
    if (((int)get_group_id(0)) * ((int)get_local_size(0)) + ((int)get_local_id(0)) >= n) return;
    int g = ((int)get_group_id(0)) * 4 + ((int)get_local_id(0));
    double r[3];
    for (int q = 0; q < 3; q++) {
        r[q] = (double)(q * g);
    }
    for (int q = 0; q < 6; q += 2) {
        // a loop with a step
    }
    double s = sqrt(fma(r[2], 2.0, r[1]));
    int lo = min(g, n - 1);
    bespoke_atomic_add_f64(&y[to[lo]], s > 2.0 ? s : -s);
    double a;
    double b;
    {
        const double2 _v = *(const __global double2*)(x + g * 2);
        a = _v.s0;
        b = _v.s1;
    }
    *(__global double2*)(y + (g * 2 + 4)) = (double2)(fmax(a, fabs(b)), b * rsqrt(a * a + 1.0));
}
