#pragma OPENCL EXTENSION cl_khr_fp64 : enable

/* ring_f64: sample
 * a sample of asynchronous copies through a ring of shared buffers
 */
__kernel __attribute__((reqd_work_group_size(32, 1, 1))) void ring_f64(int n, __global const double* restrict x, __global double* restrict y)
{
    __local double ring[3][32];
    double acc = 0.0;
    ring[0 % 3][((int)get_local_id(0))] = (((int)get_group_id(0)) * 5 + 0) * 32 + ((int)get_local_id(0)) < n ? x[(((int)get_group_id(0)) * 5 + 0) * 32 + ((int)get_local_id(0))] : 0.0;
    ring[1 % 3][((int)get_local_id(0))] = (((int)get_group_id(0)) * 5 + 1) * 32 + ((int)get_local_id(0)) < n ? x[(((int)get_group_id(0)) * 5 + 1) * 32 + ((int)get_local_id(0))] : 0.0;
    for (int q = 0; q < 5; q++) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (q + 2 < 5) {
            ring[(q + 2) % 3][((int)get_local_id(0))] = (((int)get_group_id(0)) * 5 + (q + 2)) * 32 + ((int)get_local_id(0)) < n ? x[(((int)get_group_id(0)) * 5 + (q + 2)) * 32 + ((int)get_local_id(0))] : 0.0;
        }
        acc = acc + (double)(q + 1) * ring[q % 3][31 - ((int)get_local_id(0))];
    }
    y[((int)get_group_id(0)) * 32 + ((int)get_local_id(0))] = acc;
}
