
/* misc_f64: sample
 * a sample of the IR's other statements
 */
extern "C" __global__ void __launch_bounds__(4) misc_f64(int n, const int* __restrict__ to, const double* __restrict__ x, double* __restrict__ y)
{
    if (((int)blockIdx.x) * ((int)blockDim.x) + ((int)threadIdx.x) >= n) return;
    int g = ((int)blockIdx.x) * 4 + ((int)threadIdx.x);
    double r[3];
    for (int q = 0; q < 3; q++) {
        r[q] = (double)(q * g);
    }
    for (int q = 0; q < 6; q += 2) {
        // a loop with a step
    }
    double s = sqrt(fma(r[2], 2.0, r[1]));
    int lo = min(g, n - 1);
    atomicAdd(&y[to[lo]], s > 2.0 ? s : -s);
    double a;
    double b;
    {
        const double2 _v = *(const double2*)(x + g * 2);
        a = _v.x;
        b = _v.y;
    }
    *(double2*)(y + (g * 2 + 4)) = make_double2(fmax(a, fabs(b)), b * rsqrt(a * a + 1.0));
}
