inline void bespoke_atomic_add_f32(volatile __global float *p, float v)
{
    uint old = as_uint(*p), seen;
    do {
        seen = old;
        old = atomic_cmpxchg((volatile __global uint *)p, seen, as_uint(as_float(seen) + v));
    } while (old != seen);
}

/* misc_f32: sample
 * a sample of the IR's other statements
 */
__kernel __attribute__((reqd_work_group_size(4, 1, 1))) void misc_f32(int n, __global const int* restrict to, __global const float* restrict x, __global float* restrict y)
{
    if (((int)get_group_id(0)) * ((int)get_local_size(0)) + ((int)get_local_id(0)) >= n) return;
    int g = ((int)get_group_id(0)) * 4 + ((int)get_local_id(0));
    float r[3];
    for (int q = 0; q < 3; q++) {
        r[q] = (float)(q * g);
    }
    for (int q = 0; q < 6; q += 2) {
        // a loop with a step
    }
    float s = sqrt(fma(r[2], 2.0f, r[1]));
    int lo = min(g, n - 1);
    bespoke_atomic_add_f32(&y[to[lo]], s > 2.0f ? s : -s);
    float a;
    float b;
    {
        const float2 _v = *(const __global float2*)(x + g * 2);
        a = _v.s0;
        b = _v.s1;
    }
    *(__global float2*)(y + (g * 2 + 4)) = (float2)(fmax(a, fabs(b)), b * rsqrt(a * a + 1.0f));
}
