// Reference of the nbody workload (templates/nbody/nbody.json), written independently of the
// tuned kernel: one thread per body i, reading the float4 records only (x, y, z, mass in
// oldBodyInfo; velocity in oldVel):
//     a_i   = sum over every body j (i included: it adds 0) of m_j d / (|d|^2 + softeningSqr)^(3/2),
//             d = p_j - p_i
//     p_i' = p_i + dt v_i + damping dt^2 a_i,   v_i' = v_i + dt a_i
// written as (p_i', m_i) to newBodyInfo and (v_i', 0) to newVel. Each pair term in float with
// IEEE sqrt and division (no fast math), the sum over j in double, the update in double,
// rounded once to float. Works for any n.
//
// kopt:entry nbody_reference
// kopt:grid ceil_div(n, 128), 1, 1
// kopt:block 128, 1, 1
// kopt:shared 0

extern "C" __global__ void nbody_reference(
    float timeDelta, const float* __restrict__ oldBodyInfo, const float* oldPosX, const float* oldPosY,
    const float* oldPosZ, const float* mass, float* __restrict__ newBodyInfo, const float* __restrict__ oldVel,
    const float* oldVelX, const float* oldVelY, const float* oldVelZ, float* __restrict__ newVel, float damping,
    float softeningSqr, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float px = oldBodyInfo[4 * i], py = oldBodyInfo[4 * i + 1], pz = oldBodyInfo[4 * i + 2];
  double ax = 0.0, ay = 0.0, az = 0.0;
  for (int j = 0; j < n; ++j) {
    const float dx = oldBodyInfo[4 * j] - px, dy = oldBodyInfo[4 * j + 1] - py, dz = oldBodyInfo[4 * j + 2] - pz;
    const float r = sqrtf(dx * dx + dy * dy + dz * dz + softeningSqr);
    const float f = oldBodyInfo[4 * j + 3] / (r * r * r);
    ax += (double)(dx * f);
    ay += (double)(dy * f);
    az += (double)(dz * f);
  }
  const double dt = timeDelta, dd = (double)damping * dt * dt;
  const double vx = oldVel[4 * i], vy = oldVel[4 * i + 1], vz = oldVel[4 * i + 2];
  newBodyInfo[4 * i] = (float)(px + dt * vx + dd * ax);
  newBodyInfo[4 * i + 1] = (float)(py + dt * vy + dd * ay);
  newBodyInfo[4 * i + 2] = (float)(pz + dt * vz + dd * az);
  newBodyInfo[4 * i + 3] = oldBodyInfo[4 * i + 3];
  newVel[4 * i] = (float)(vx + dt * ax);
  newVel[4 * i + 1] = (float)(vy + dt * ay);
  newVel[4 * i + 2] = (float)(vz + dt * az);
  newVel[4 * i + 3] = 0.0f;
}
