// Reference of the convolution workload (templates/convolution/convolution.json), written
// independently of the tuned kernel: for every output pixel (x, y) of a row-major image_width x
// image_height image,
//     output[y, x] = sum over j < filter_height, i < filter_width of
//                    input[(y + j) * (image_width + filter_width - 1) + x + i] * filter[j * filter_width + i]
// (the input carries the filter's border: (image_width + filter_width - 1) x (image_height +
// filter_height - 1), filter_width and _height odd), the products and the sum in double, rounded
// once to float. It reads the filter from the global buffer `filter` (the tuned kernel reads the
// same values from its __constant__ copy d_filter). One thread per pixel.
//
// The sizes come as -D image_width, image_height, filter_width, filter_height (the spec's
// defines: the filter's and each case's sizes), the names the tuned kernel uses.
//
// kopt:entry convolution_reference
// kopt:grid ceil_div(image_width, 16), ceil_div(image_height, 16), 1
// kopt:block 16, 16, 1
// kopt:shared 0

extern "C" __global__ void convolution_reference(float* __restrict__ output, const float* __restrict__ input,
                                                 const float* __restrict__ filter) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= image_width || y >= image_height) return;
  const long long in_w = image_width + filter_width - 1;
  double s = 0.0;
  for (int j = 0; j < filter_height; ++j)
    for (int i = 0; i < filter_width; ++i)
      s += (double)input[(y + j) * in_w + x + i] * (double)filter[j * filter_width + i];
  output[(long long)y * image_width + x] = (float)s;
}
