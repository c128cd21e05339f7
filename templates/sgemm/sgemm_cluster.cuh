// Thread block clusters (sm_90): the rank of this block in its cluster, a barrier over the whole
// cluster with release/acquire semantics (shared-memory writes before it are visible to every
// block of the cluster after it; every block has started once any block passes it), and loads
// from another block's shared memory (DSMEM).
namespace sgemm_cluster {
__device__ __forceinline__ unsigned rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
__device__ __forceinline__ void sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
// The shared::cluster address of the byte at shared-memory address `local` in block `r`.
__device__ __forceinline__ unsigned map(unsigned local, unsigned r) {
  unsigned a;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(a) : "r"(local), "r"(r));
  return a;
}
__device__ __forceinline__ float4 load4(unsigned cluster_addr) {
  float4 v;
  asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];\n"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(cluster_addr) : "memory");
  return v;
}
__device__ __forceinline__ float load1(unsigned cluster_addr) {
  float v;
  asm volatile("ld.shared::cluster.f32 %0, [%1];\n" : "=f"(v) : "r"(cluster_addr) : "memory");
  return v;
}
// Dynamic shared memory of this launch, in bytes.
__device__ __forceinline__ unsigned dynamic_smem_bytes() {
  unsigned b;
  asm volatile("mov.u32 %0, %%dynamic_smem_size;\n" : "=r"(b));
  return b;
}
}  // namespace sgemm_cluster
