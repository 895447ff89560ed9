
/* ring_f64: sample
 * a sample of asynchronous copies through a ring of shared buffers
 */
extern "C" __global__ void __launch_bounds__(32) ring_f64(int n, const double* __restrict__ x, double* __restrict__ y)
{
    __shared__ double ring[3][32];
    double acc = 0.0;
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;"
        :: "r"((unsigned)__cvta_generic_to_shared(&ring[0 % 3][((int)threadIdx.x)])), "l"(((((int)blockIdx.x) * 5 + 0) * 32 + ((int)threadIdx.x) < n ? x + ((((int)blockIdx.x) * 5 + 0) * 32 + ((int)threadIdx.x)) : x)), "r"(((((int)blockIdx.x) * 5 + 0) * 32 + ((int)threadIdx.x) < n ? 8 : 0)) : "memory");
    asm volatile("cp.async.commit_group;" ::: "memory");
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;"
        :: "r"((unsigned)__cvta_generic_to_shared(&ring[1 % 3][((int)threadIdx.x)])), "l"(((((int)blockIdx.x) * 5 + 1) * 32 + ((int)threadIdx.x) < n ? x + ((((int)blockIdx.x) * 5 + 1) * 32 + ((int)threadIdx.x)) : x)), "r"(((((int)blockIdx.x) * 5 + 1) * 32 + ((int)threadIdx.x) < n ? 8 : 0)) : "memory");
    asm volatile("cp.async.commit_group;" ::: "memory");
    for (int q = 0; q < 5; q++) {
        asm volatile("cp.async.wait_group 1;" ::: "memory");
        __syncthreads();
        if (q + 2 < 5) {
            asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;"
                :: "r"((unsigned)__cvta_generic_to_shared(&ring[(q + 2) % 3][((int)threadIdx.x)])), "l"(((((int)blockIdx.x) * 5 + (q + 2)) * 32 + ((int)threadIdx.x) < n ? x + ((((int)blockIdx.x) * 5 + (q + 2)) * 32 + ((int)threadIdx.x)) : x)), "r"(((((int)blockIdx.x) * 5 + (q + 2)) * 32 + ((int)threadIdx.x) < n ? 8 : 0)) : "memory");
        }
        asm volatile("cp.async.commit_group;" ::: "memory");
        acc = acc + (double)(q + 1) * ring[q % 3][31 - ((int)threadIdx.x)];
    }
    y[((int)blockIdx.x) * 32 + ((int)threadIdx.x)] = acc;
}
